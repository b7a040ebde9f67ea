// The web chat: the conversations beside the one open (a drawer on a phone), a message
// sent by POST with the dashboard's form token, and each answer followed on its event
// stream as the butler writes it. Every text from the server or the person is set with
// textContent: nothing anyone wrote ever becomes markup.
(function () {
  "use strict";
  const page = document.body;
  if (page.id !== "chat") return;
  const $ = (id) => document.getElementById(id);
  const butler = page.dataset.butler;
  const token = page.dataset.formToken;
  const limits = {
    chars: Number(page.dataset.maxChars),
    files: Number(page.dataset.maxFiles),
    bytes: Number(page.dataset.maxFileBytes),
  };
  const list = $("thread-list");
  const messages = $("messages");
  const scroller = $("scroller");
  const form = $("composer");
  const text = $("text");
  const picker = $("files");
  const chosen = $("chosen");
  const problem = $("problem");
  const state = $("state");
  const empty = $("empty");
  const send = $("send");
  const COMMAND = /^\s*\/(new|stop|status|help)(\s|$)/;
  let conversation = new URLSearchParams(location.search).get("c");
  let files = [];
  const streams = new Map(); // turn id -> its EventSource

  function make(tag, css, words) {
    const node = document.createElement(tag);
    if (css) node.className = css;
    if (words !== undefined) node.textContent = words;
    return node;
  }

  function when(iso) {
    const at = iso ? new Date(iso) : new Date();
    const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    if (at.toDateString() === new Date().toDateString()) return time;
    return at.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time;
  }

  function size(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return Math.round(bytes / 1024) + " KiB";
    return (bytes / 1024 / 1024).toFixed(1) + " MiB";
  }

  function show(name, line) {
    state.dataset.state = name;
    state.textContent = line;
    $("stop").hidden = streams.size === 0; // something to stop while an answer is written
  }

  function near() {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120;
  }

  function down() {
    scroller.scrollTop = scroller.scrollHeight;
  }

  function say(line) {
    problem.textContent = line;
    problem.hidden = !line;
  }

  async function getJson(url) {
    const response = await fetch(url, { cache: "no-store", credentials: "same-origin" });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || "the butler answered " + response.status);
    return data;
  }

  // -- what the page shows ------------------------------------------------------

  function mine(words, notes, id) {
    const item = make("li", "message mine");
    item.dataset.id = id;
    if (notes.length) {
      const attached = make("ul", "attached");
      for (const note of notes) attached.append(make("li", "", note));
      item.append(attached);
    }
    if (words) item.append(make("div", "bubble", words));
    item.append(make("p", "meta"));
    messages.append(item);
    empty.hidden = true;
    return item;
  }

  function theirs(kind, after) {
    const item = make("li", "message theirs " + kind);
    item.append(make("ul", "steps"), make("div", "bubble"), make("ul", "files-out"));
    item.append(make("p", "meta"));
    if (after) after.after(item);
    else messages.append(item);
    return item;
  }

  function stamp(item, iso, who, session) {
    const meta = item.querySelector(".meta");
    meta.textContent = (who ? who + " · " : "") + when(iso);
    if (session) {
      const link = make("a", "", "session");
      link.href = "/sessions/" + encodeURIComponent(session);
      meta.append(" · ", link);
    }
  }

  function answered(item, answer, ok, session, iso) {
    item.querySelector(".bubble").textContent = answer;
    item.classList.remove("writing");
    item.classList.toggle("failed", !ok);
    item.dataset.state = "done";
    stamp(item, iso, butler, session);
  }

  function conversations(rows) {
    list.textContent = "";
    if (!rows.length) list.append(make("li", "none", "No conversations yet."));
    for (const row of rows) {
      const button = make("button");
      button.type = "button";
      button.dataset.conversation = row.id;
      button.append(make("span", "opening", row.opening || "(files)"));
      button.append(make("span", "when", when(row.last_message_at) + " · " + row.messages + " messages"));
      if (row.id === conversation) button.setAttribute("aria-current", "true");
      button.addEventListener("click", () => {
        drawer(false);
        open(row.id);
      });
      const item = make("li");
      item.append(button);
      list.append(item);
    }
  }

  async function refresh() {
    try {
      conversations((await getJson("/chat/api/conversations")).conversations);
    } catch (error) {
      show("offline", "butler unreachable");
    }
  }

  function mark() {
    for (const button of list.querySelectorAll("button[data-conversation]")) {
      const current = button.dataset.conversation === conversation;
      if (current) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
    const url = new URL(location.href);
    if (conversation) url.searchParams.set("c", conversation);
    else url.searchParams.delete("c");
    history.replaceState(null, "", url);
  }

  function quiet() {
    for (const source of streams.values()) source.close();
    streams.clear();
    show("idle", "");
  }

  async function open(id) {
    quiet();
    conversation = id;
    mark();
    messages.textContent = "";
    empty.hidden = false;
    if (!id) return;
    let data;
    try {
      data = await getJson("/chat/api/conversations/" + encodeURIComponent(id));
    } catch (error) {
      say(error.message);
      conversation = null;
      mark();
      return;
    }
    const asked = new Map();
    for (const message of data.messages) {
      if (message.direction === "in") {
        asked.set(message.id, message.status);
        stamp(mine(message.body, message.attachments, message.id), message.at, "you");
      } else {
        const item = theirs("answer");
        const question = message.id.replace(/\/answer$/, "");
        answered(item, message.body, asked.get(question) !== "failed", message.session_id, message.at);
      }
    }
    for (const turn of data.running) {
      const asking = messages.querySelector('li[data-id="' + CSS.escape(turn) + '"]');
      follow(turn, theirs("writing", asking));
    }
    down();
  }

  // -- an answer, as it is written ----------------------------------------------

  function follow(turn, item) {
    const source = new EventSource("/chat/api/turns/" + encodeURIComponent(turn) + "/events");
    streams.set(turn, source);
    const bubble = item.querySelector(".bubble");
    const steps = item.querySelector(".steps");
    const out = item.querySelector(".files-out");
    const data = (event) => JSON.parse(event.data);
    const keep = (change) => {
      const stay = near();
      change();
      if (stay) down();
    };
    show("working", "writing…");
    source.addEventListener("status", (event) => {
      show("working", data(event).line === "queued" ? "queued…" : "writing…");
    });
    source.addEventListener("activity", (event) => {
      keep(() => steps.append(make("li", "", data(event).line)));
    });
    source.addEventListener("text", (event) => {
      const said = data(event);
      keep(() => {
        if (!said.delta && bubble.textContent) bubble.append("\n");
        bubble.append(said.text);
      });
      item.dataset.streamed = "true";
    });
    source.addEventListener("session", (event) => {
      item.dataset.session = data(event).session_id;
    });
    source.addEventListener("file", (event) => {
      const file = data(event);
      const link = make("a", "", file.name + " (" + size(file.size) + ")");
      link.href = "/chat/api/files/" + encodeURIComponent(file.id);
      link.download = "";
      const entry = make("li");
      entry.append(link);
      keep(() => out.append(entry));
    });
    source.addEventListener("done", (event) => {
      const end = data(event);
      source.close();
      streams.delete(turn);
      keep(() => answered(item, end.answer, end.ok, end.session_id));
      if (!streams.size) show("idle", "");
      refresh();
    });
    source.onerror = () => {
      if (source.readyState !== EventSource.CLOSED) {
        show("offline", "reconnecting…");
        return;
      }
      // The turn is no longer in hand (the daemon restarted): the record has the answer.
      streams.delete(turn);
      if (conversation) open(conversation);
    };
    source.onopen = () => show("working", "writing…");
  }

  // -- writing and sending --------------------------------------------------------

  function grow() {
    text.style.height = "auto";
    text.style.height = Math.min(text.scrollHeight + 2, window.innerHeight * 0.4) + "px";
  }

  function listFiles() {
    chosen.textContent = "";
    files.forEach((file, index) => {
      const entry = make("li");
      entry.append(make("span", "", file.name + " · " + size(file.size)));
      const drop = make("button", "", "×");
      drop.type = "button";
      drop.setAttribute("aria-label", "Remove " + file.name);
      drop.addEventListener("click", () => {
        files.splice(index, 1);
        listFiles();
      });
      entry.append(drop);
      chosen.append(entry);
    });
  }

  picker.addEventListener("change", () => {
    const added = Array.from(picker.files);
    picker.value = "";
    const large = added.find((file) => file.size > limits.bytes);
    if (large) return say(large.name + " is larger than the " + size(limits.bytes) + " a file may be");
    files = files.concat(added).slice(0, limits.files);
    if (files.length < added.length) say("at most " + limits.files + " files a message");
    else say("");
    listFiles();
  });

  // Send ``words`` (and the files chosen, when they come from the box below).
  async function submit(words, fromBox) {
    const attached = fromBox ? files : [];
    if (!words.trim() && !attached.length) return;
    if (words.length > limits.chars) return say("at most " + limits.chars + " characters a message");
    const id = crypto.randomUUID();
    const body = new FormData();
    body.append("id", id);
    body.append("conversation", conversation || "");
    body.append("text", words);
    for (const file of attached) body.append("files", file, file.name);
    const item = mine(words, attached.map((file) => file.name + " · " + size(file.size)), id);
    item.classList.add("sending");
    down();
    send.disabled = true;
    let response;
    let answer;
    try {
      response = await fetch("/chat/api/messages", {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { "X-Butler-Form-Token": token },
      });
      answer = await response.json().catch(() => ({}));
    } catch (error) {
      answer = { error: "not sent: the butler cannot be reached; send it again" };
    }
    send.disabled = false;
    if (!response || !response.ok) {
      item.remove(); // what was written stays in the box, to send again
      empty.hidden = messages.children.length > 0;
      return say(answer.error || "not sent: the butler answered " + response.status);
    }
    say("");
    if (fromBox) {
      text.value = "";
      files = [];
      listFiles();
      grow();
    }
    item.classList.remove("sending");
    stamp(item, null, "you");
    if (answer.reply !== undefined) {
      if (answer.conversation !== conversation && COMMAND.test(words)) {
        quiet();
        conversation = answer.conversation;
        messages.textContent = "";
        messages.append(item);
        mark();
      }
      const note = theirs("note");
      answered(note, answer.reply, true, null);
      down();
      return;
    }
    if (answer.conversation !== conversation) {
      if (conversation) {
        // "/new ..." started the next conversation: it opens with this message.
        quiet();
        messages.textContent = "";
        messages.append(item);
      }
      conversation = answer.conversation;
      mark();
    }
    follow(answer.turn, theirs("writing"));
    down();
    refresh();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(text.value, true);
  });
  $("stop").addEventListener("click", () => submit("/stop", false));
  text.addEventListener("input", grow);
  text.addEventListener("keydown", (event) => {
    const phone = window.matchMedia("(pointer: coarse)").matches;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !phone) {
      event.preventDefault();
      submit(text.value, true);
    }
  });

  // -- the conversations' drawer, a new conversation ------------------------------

  function drawer(openIt) {
    page.classList.toggle("threads-open", openIt);
    $("show-threads").setAttribute("aria-expanded", String(openIt));
  }

  $("show-threads").addEventListener("click", () => drawer(!page.classList.contains("threads-open")));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") drawer(false);
  });
  $("new").addEventListener("click", () => {
    drawer(false);
    open(null);
    text.focus();
  });

  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/chat/sw.js", { scope: "/chat/" }).catch(() => {});
  }
  refresh();
  open(conversation);
})();
