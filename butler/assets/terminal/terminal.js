// A live builder's terminal: xterm.js on a WebSocket to the builder's tmux session.
// The server sends tmux's output as binary frames; this page sends what is typed as
// {"type": "input"} and its size as {"type": "resize"}. "?mode=view" on the page
// watches read-only (the server drops any input of such a terminal).
(function () {
  "use strict";
  const panel = document.getElementById("terminal-panel");
  if (!panel) return;
  // The live region is re-rendered on every poll; the terminal must outlive that.
  const live = document.getElementById("live");
  if (live && live.contains(panel)) live.after(panel);

  // xterm.js measures the font and writes cell sizes and colours into <style>
  // elements it creates; the page's policy admits those by this response's nonce.
  const nonce = panel.nonce;
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (name, options) {
    const element = create.call(this, name, options);
    if (nonce && String(name).toLowerCase() === "style") element.nonce = nonce;
    return element;
  };

  const view = new URLSearchParams(location.search).get("mode") === "view";
  const state = document.getElementById("terminal-state");
  const toggle = document.getElementById("terminal-mode");

  function show(name, text) {
    state.dataset.state = name;
    state.textContent = text;
  }

  function connect(term) {
    const url = new URL(panel.dataset.src, location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("cols", term.cols);
    url.searchParams.set("rows", term.rows);
    if (view) url.searchParams.set("mode", "view");
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    const send = (message) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
    };
    socket.onopen = () => show("open", view ? "watching (read-only)" : "connected");
    socket.onmessage = (event) => term.write(new Uint8Array(event.data));
    socket.onclose = (event) =>
      show("closed", "disconnected" + (event.reason ? ": " + event.reason : ""));
    term.onData((data) => send({ type: "input", data: data }));
    term.onResize((size) => send({ type: "resize", cols: size.cols, rows: size.rows }));
  }

  function start() {
    toggle.textContent = view ? "take the keyboard" : "watch read-only";
    toggle.href = view ? location.pathname : "?mode=view";
    const term = new Terminal({
      disableStdin: view,
      cursorBlink: !view,
      fontSize: 13,
      scrollback: 2000,
    });
    const fit = new FitAddon.FitAddon();
    term.loadAddon(fit);
    const screen = document.getElementById("terminal");
    term.open(screen);
    fit.fit();
    new ResizeObserver(() => fit.fit()).observe(screen);
    window.terminal = term; // for a person's console, and the browser tests
    connect(term);
    if (!view) term.focus();
  }

  // The deferred xterm.js and its fit addon run after this file and before this event.
  document.addEventListener("DOMContentLoaded", start);
})();
