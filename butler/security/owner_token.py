"""The owner token: the one secret that opens a butler's HTTP routes.

Created on first start with :func:`secrets.token_urlsafe`, kept in the
butler's data folder as ``token`` (mode 0600, created exclusively so no other
process can slip a file in first), and overridden by ``BUTLER_TOKEN`` in the
environment (containers). The daemon and every command that talks to it read
it through :func:`owner_token`, so the owner never types it.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import stat
from pathlib import Path

from butler.errors import ConfigError
from butler.paths import Install, butler_dir
from butler.security.private_files import replace_private, write_private

log = logging.getLogger(__name__)

ENV_VAR = "BUTLER_TOKEN"
TOKEN_FILE = "token"
#: A token a person sets must be as hard to guess as one we generate (32 bytes, base64).
MIN_LENGTH = 32
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9._~+/=-]+$")


def token_path(butler: Install) -> Path:
    """Where the token of the butler install is kept."""
    return butler_dir(butler) / TOKEN_FILE


def owner_token(butler: Install) -> str:
    """The butler's owner token: ``BUTLER_TOKEN``, else its token file, created if missing."""
    configured = os.environ.get(ENV_VAR)
    if configured is not None:
        return _checked(configured.strip(), f"environment variable {ENV_VAR}")
    path = token_path(butler)
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    try:
        write_private(path, token + "\n", how="exclusive")
    except FileExistsError:  # another process made it first: use theirs
        return _read(path)
    log.info("owner token created", extra={"path": str(path)})
    return token


def rotate_owner_token(butler: Install) -> str:
    """Replace the butler's token with a new one, which ends every login made with the old.

    A running daemon reads the file again when it changes (:class:`LiveToken`), so
    the old token and every cookie and ticket derived from it stop working at once.
    """
    if os.environ.get(ENV_VAR) is not None:
        raise ConfigError(
            f"{ENV_VAR} is set, so the token file is not used: rotate the token by "
            f"setting {ENV_VAR} to a new value where it is set, then restart the butler"
        )
    token = secrets.token_urlsafe(32)
    replace_private(token_path(butler), token + "\n")
    log.info("owner token rotated", extra={"path": str(token_path(butler))})
    return token


class LiveToken:
    """The butler's owner token as it is now: the file is read again when it changes.

    One ``stat`` per call; ``BUTLER_TOKEN``, when set, is fixed for the process.
    """

    def __init__(self, butler: Install) -> None:
        self.name = butler.name
        self.fixed = os.environ.get(ENV_VAR) is not None
        self.path = token_path(butler)  # once: finding it makes folders
        self._stamp = self._stat()
        self._value = owner_token(butler)

    def _stat(self) -> tuple[int, int, int] | None:
        if self.fixed:
            return None
        try:
            info = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        return info.st_ino, info.st_mtime_ns, info.st_size

    def __call__(self) -> str:
        if self.fixed:
            return self._value
        stamp = self._stat()
        if stamp != self._stamp and stamp is not None:
            try:
                self._value = _read(self.path)
            except (OSError, ConfigError) as exc:
                # Keep the token in force rather than open the door or lock the owner out.
                log.warning("owner token file unreadable; the previous token stays", exc_info=exc)
            self._stamp = stamp
        return self._value


def stored_owner_token(butler: Install) -> str | None:
    """The token in the butler's token file, or None when it has none.

    For a process that talks to *other* butlers (the roster dashboard): it
    never creates the file and ignores ``BUTLER_TOKEN``, which is its own.
    """
    try:
        return _read(token_path(butler))
    except FileNotFoundError:
        return None


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, encoding="utf-8") as file:
        info = os.fstat(file.fileno())
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            # Narrow the file itself (never its folder): others must not read it.
            os.fchmod(file.fileno(), 0o600)
            log.warning(
                "owner token file was readable by others; now 0600", extra={"path": str(path)}
            )
        text = file.read(4096).strip()
    return _checked(text, str(path))


def _checked(token: str, where: str) -> str:
    if len(token) < MIN_LENGTH or not _TOKEN_CHARS.match(token):
        raise ConfigError(
            f"{where}: expected a token of at least {MIN_LENGTH} characters of letters, "
            "digits and -._~+/= (make one with: "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def same_token(presented: str | None, expected: str) -> bool:
    """Whether ``presented`` is ``expected``, in time that does not depend on where they differ."""
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode(), expected.encode())
