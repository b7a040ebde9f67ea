"""Files a session sends the person through the web chat, kept for the person to fetch.

In memory and bounded: each file at most a channel's attachment size, the
latest :data:`MAX_FILES` only (a file older than that is gone, and its link
says so). A file is named by an id nobody can guess; its name and type are
the session's words, served as data (an attachment to download, never a page
to run).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass

#: Files kept at once; the oldest goes first.
MAX_FILES = 20


@dataclass(frozen=True)
class OutFile:
    """A file for the person: its name and type as the session gave them, its bytes."""

    name: str
    media_type: str
    data: bytes


class Outbox:
    """The latest files sessions sent, by id."""

    def __init__(self, max_bytes: int, max_files: int = MAX_FILES) -> None:
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._files: OrderedDict[str, OutFile] = OrderedDict()

    def put(self, file: OutFile) -> str | None:
        """Keep ``file``; its id, or None when it is larger than a file may be."""
        if len(file.data) > self.max_bytes:
            return None
        file_id = secrets.token_urlsafe(16)
        self._files[file_id] = file
        while len(self._files) > self.max_files:
            self._files.popitem(last=False)
        return file_id

    def get(self, file_id: str) -> OutFile | None:
        return self._files.get(file_id)
