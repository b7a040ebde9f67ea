"""The one exception hierarchy of butler.

Every error a person can cause is a :class:`UserError`: its message is one
line saying what was wrong, where, and what is expected. The CLI prints it and
exits with status 2; nothing else of butler's own should reach a user as a
traceback.
"""


class ButlerError(Exception):
    """Base class of every error butler raises on purpose."""


class UserError(ButlerError):
    """A mistake in input a person gave: config, arguments, files."""


class ConfigError(UserError):
    """A butler's configuration folder or file is wrong."""


class DatabaseError(ButlerError):
    """The database could not be reached, started or migrated."""


class RuntimeAdapterError(ButlerError):
    """An agent runtime could not be started or failed while running."""


class SessionNotFound(UserError):
    """A session id names no recorded session."""


class Rejected(ButlerError):
    """A request for a session refused before it got a slot (queue full, shutting down)."""


class ProcessTimeout(RuntimeAdapterError):
    """A runtime process outlived its time limit; its process group was killed."""

    def __init__(self, timeout_s: float, stderr: str = "") -> None:
        super().__init__(f"timeout after {timeout_s:g} s")
        self.timeout_s = timeout_s
        self.stderr = stderr
