"""What the untrusted-file tests share: the secret that must not leak, a call that must end."""

from __future__ import annotations

import threading
from typing import Any

SECRET = "owner-token-5f2a9c-must-not-leak"


def finishes(call: Any, timeout: float = 10.0) -> Any:
    """What ``call()`` returned (or raised), failing the test if it did not end in time:
    a FIFO opened for reading waits for a writer forever, /dev/zero never ends."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # the refusal is an outcome too
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "the daemon's read hung on what the runtime planted"
    return outcome[0]
