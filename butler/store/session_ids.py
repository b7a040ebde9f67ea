"""A session named by the start of its id, as git names a commit: ids that paste.

Pages and tables show the first 8 hex digits of a session's id; commands and
pages take any start of it of at least :data:`SHORTEST` digits (dashes
optional), and the whole id as before. A start is a range of ids, so finding
it reads the table's primary key like a whole id does.
"""

from __future__ import annotations

import uuid

from butler.errors import UserError

#: The fewest hex digits taken as the start of an id (git's minimum too).
SHORTEST = 4
#: How many hex digits pages and tables show.
SHOWN = 8


class AmbiguousId(UserError):
    """The start given is the start of several sessions' ids."""


def short(session_id: object) -> str:
    """The start of an id that pages and tables show."""
    return str(session_id)[:SHOWN]


def id_range(given: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The first and last id starting with ``given``; None when it cannot start an id."""
    digits = given.strip().lower().replace("-", "")
    if not SHORTEST <= len(digits) <= 32 or any(c not in "0123456789abcdef" for c in digits):
        return None
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))


def ambiguous(given: str, ids: list[object]) -> AmbiguousId:
    """The refusal of a start that several ids share, naming some of them."""
    shown = ", ".join(str(i)[: max(SHOWN, len(given) + 4)] for i in ids[:4])
    more = ", ..." if len(ids) > 4 else ""
    return AmbiguousId(
        f"{given!r} starts the ids of several sessions ({shown}{more}); give more of the id"
    )
