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
