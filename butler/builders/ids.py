"""Collision-safe builder ids, branch names and worktree paths (pure).

=========  ==========================  ==================================
Mode       Builder id                  Example
=========  ==========================  ==================================
spec       the project id              ``0009`` (branch ``builder/0009-name``)
task       ``task-{hash4}-{rand4}``    ``task-a7f3-x9k2``
protocol   ``protocol-{name}-{ts}``    ``protocol-cleanup-1733250000``
shell      ``shell-{ts}-{rand4}``      ``shell-1733250000-b4c1``
=========  ==========================  ==================================

``hash4`` (the first 4 hex digits of the task text's SHA-256) lets a person
recognise a task; ``rand4`` and the timestamp keep repeated spawns apart. Four
random characters alone collide often over a thousand spawns of one task (the
birthday bound: about one chance in four), so every generator also takes the
ids already in use and draws again, or moves the timestamp on, until it is free.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from collections.abc import Callable, Container

ALPHABET = string.ascii_lowercase + string.digits
#: Draws before giving up; with 36**4 names this is only reached when nearly all are used.
MAX_DRAWS = 10_000

Random4 = Callable[[], str]


def rand4() -> str:
    """Four random lower-case letters or digits."""
    return "".join(secrets.choice(ALPHABET) for _ in range(4))


def text_hash4(text: str) -> str:
    """The first four hex digits of the SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:4]


def _first_free(candidates: Callable[[int], str], taken: Container[str]) -> str:
    for attempt in range(MAX_DRAWS):
        candidate = candidates(attempt)
        if candidate not in taken:
            return candidate
    raise RuntimeError(f"no free builder id after {MAX_DRAWS} draws")


def task_id(text: str, taken: Container[str] = (), draw: Random4 = rand4) -> str:
    """``task-{hash4}-{rand4}``, not in ``taken``."""
    prefix = f"task-{text_hash4(text)}-"
    return _first_free(lambda _: prefix + draw(), taken)


def protocol_id(name: str, now: int, taken: Container[str] = ()) -> str:
    """``protocol-{name}-{ts}``; a second spawn in the same second takes the next one."""
    return _first_free(lambda step: f"protocol-{name}-{now + step}", taken)


def shell_id(now: int, taken: Container[str] = (), draw: Random4 = rand4) -> str:
    """``shell-{ts}-{rand4}``, not in ``taken``."""
    return _first_free(lambda _: f"shell-{now}-{draw()}", taken)


def branch_name(builder_id: str, spec_name: str | None = None) -> str:
    """``builder/<id>``; a spec builder keeps its spec's name, as before: ``builder/0009-name``."""
    if spec_name:
        return f"builder/{spec_name}"
    return f"builder/{builder_id}"
