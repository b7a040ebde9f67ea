// Live updates: poll the page's JSON endpoint and swap in the HTML the server rendered
// (and escaped) for it. Stops polling once a session's page says it is final.
(function () {
  "use strict";
  const live = document.getElementById("live");
  const updated = document.getElementById("updated");
  if (!live || !live.dataset.src) return;
  const every = 1500;

  async function tick() {
    let final = live.dataset.final === "true";
    try {
      const response = await fetch(live.dataset.src, { cache: "no-store" });
      if (response.ok) {
        const data = await response.json();
        live.innerHTML = data.html;
        final = Boolean(data.final);
        updated.textContent = "updated " + new Date().toLocaleTimeString();
      } else {
        updated.textContent = "server answered " + response.status;
      }
    } catch (error) {
      updated.textContent = "butler unreachable, retrying";
    }
    if (!final) setTimeout(tick, every);
  }

  if (live.dataset.final !== "true") setTimeout(tick, every);
})();
