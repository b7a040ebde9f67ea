// Live updates: poll the page's JSON endpoint and swap in the HTML the server rendered
// (and escaped) for it. Stops polling once a session's page says it is final. The list
// asks only for what changed since its last answer (its cursor) and swaps those rows in
// place; a row it does not show yet makes it fetch the whole list again.
(function () {
  "use strict";
  const live = document.getElementById("live");
  // A page whose JSON twin only answers the same HTML (charts, schedules, state,
  // roster) sends no cursor; the session list does and gets only changed rows.
  const updated = document.getElementById("updated");
  if (!live || !live.dataset.src) return;
  const every = 1500;
  let cursor = null;

  function swapRows(rows) {
    for (const [id, html] of Object.entries(rows)) {
      const row = live.querySelector('tr[data-session="' + CSS.escape(id) + '"]');
      if (!row) return false;
      row.outerHTML = html;
    }
    return true;
  }

  async function fetchJson(url) {
    const response = await fetch(url, { cache: "no-store" });
    if (!response.ok) throw new Error("server answered " + response.status);
    return response.json();
  }

  async function tick() {
    let final = live.dataset.final === "true";
    try {
      const src = live.dataset.src;
      const join = src.includes("?") ? "&" : "?";
      let data = await fetchJson(cursor ? src + join + "since=" + encodeURIComponent(cursor) : src);
      if (data.rows && !swapRows(data.rows)) data = await fetchJson(src);
      if (data.html !== undefined) live.innerHTML = data.html;
      if (data.cursor !== undefined) cursor = data.cursor;
      final = Boolean(data.final);
      updated.textContent = "updated " + new Date().toLocaleTimeString();
    } catch (error) {
      updated.textContent = error.message.startsWith("server answered")
        ? error.message
        : "butler unreachable, retrying";
    }
    if (!final) setTimeout(tick, every);
  }

  if (live.dataset.final !== "true") setTimeout(tick, every);
})();

// Keyboard: "/" jumps to the search box, as on most sites that have one.
document.addEventListener("keydown", function (event) {
  const search = document.getElementById("q");
  const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
  if (event.key === "/" && search && !typing && !event.ctrlKey && !event.metaKey) {
    event.preventDefault();
    search.focus();
  }
});
