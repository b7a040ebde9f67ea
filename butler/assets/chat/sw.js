// The web chat's service worker: it keeps the app's shell (script, style, icons, an
// offline page) so the installed app opens and says it is offline when the butler
// cannot be reached. It keeps nothing else: not the page (it holds the form token),
// not a conversation, not an answer. Those always come from the butler, or not at all.
"use strict";
const SHELL = "butler-chat-shell-1";
const FILES = [
  "/chat/chat.js",
  "/chat/chat.css",
  "/chat/icon.svg",
  "/chat/icon-192.png",
  "/chat/offline.html",
];

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(SHELL)
      .then((cache) => cache.addAll(FILES))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((n) => n !== SHELL).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  if (request.mode === "navigate") {
    // The page itself is never kept; offline, the offline page answers for it.
    event.respondWith(fetch(request).catch(() => caches.match("/chat/offline.html")));
    return;
  }
  if (FILES.includes(url.pathname)) {
    // The shell: fresh from the butler when it answers (and kept so), else as kept.
    event.respondWith(
      fetch(request)
        .then((response) => {
          if (response.ok) {
            const copy = response.clone();
            caches.open(SHELL).then((cache) => cache.put(url.pathname, copy));
          }
          return response;
        })
        .catch(() => caches.match(url.pathname)),
    );
  }
  // Anything else (conversations, answers, files) goes to the butler untouched.
});
