"""uvicorn, its signals left to the caller.

``butler up`` serves a whole roster, one uvicorn server per butler, in one process:
one SIGTERM must drain every butler's sessions first, then stop them all. uvicorn
has no setting for that: :meth:`uvicorn.Server.serve` installs its own handlers
for SIGINT and SIGTERM (with ``signal.signal``, over the event loop's) while it
serves, sets ``should_exit`` at the first signal, and raises the signal again once
it stopped. So :class:`Server` installs none, and the roster, which takes the
signals, says when each server stops (:meth:`Server.stop`).

Relies on (checked against uvicorn 0.54, pinned in pyproject.toml;
tests/adapters/test_uvicorn.py fails when any of it changes): ``serve`` installs
its handlers only through ``capture_signals``, a context manager around the whole
serving; setting ``should_exit`` (and ``force_exit``) makes ``serve`` return;
``server_state.connections`` holds the open connections, each with its peer's
address as ``client`` (the address its requests' scopes carry).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn

__all__ = ["Server"]


class Server(uvicorn.Server):
    """A uvicorn server that takes no signal: its caller stops it with :meth:`stop`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing: the caller's handlers stay in place while this server serves."""
        yield

    def open_peers(self) -> set[tuple[str, int]]:
        """The peer address of every connection open now."""
        peers = (getattr(c, "client", None) for c in self.server_state.connections)
        return {(str(p[0]), int(p[1])) for p in peers if p}

    def stop(self, *, force: bool = False) -> None:
        """Stop serving: close the listener, let open connections finish (all at once if
        ``force``), run the app's shutdown, and return from :meth:`serve`."""
        self.force_exit = self.force_exit or force
        self.should_exit = True
