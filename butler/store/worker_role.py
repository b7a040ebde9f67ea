"""A worker's own database role: what ``butler worker --init-role`` makes, and the worker's
look at how much its role may read (migration 020, docs/scaling.md, docs/security.md).

A worker's role is a LOGIN role member of the group :data:`GROUP`, which may touch
only the butlers' job queues: PgQueuer's tables, the ``workers`` rows, and a
session's row only through the checked functions of migration 020. Roles are the
PostgreSQL cluster's: the group is made once, and each butler's schema grants it
its own queue (its migration does; :func:`init_role` grants again for a schema
migrated before the group existed).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import asyncpg

from butler.errors import UserError
from butler.store.db import Database, quote_ident

#: The group every worker's role is a member of (made by migration 020 or here).
GROUP = "butler_worker"
#: A role's name as PostgreSQL takes it unquoted: we print it in a URL and in SQL.
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def check_role_name(name: str) -> str:
    """``name`` when fit for a worker's role; else :class:`UserError` saying why."""
    if not _NAME.match(name) or name == GROUP or name.startswith("pg_"):
        raise UserError(
            f"--init-role: {name!r} is not a name for a worker's role: expected lowercase "
            f"letters, digits and _ (at most 63, not starting with a digit or pg_, not {GROUP})"
            ", e.g. worker_gpu1"
        )
    return name


def worker_url(admin_url: str, role: str, password: str) -> str:
    """``admin_url`` (the database the daemons use) as the role ``role`` with
    ``password``: same server, database and options, another user."""
    parts = urlsplit(admin_url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise UserError(
            "--init-role: the database URL must be a postgresql:// URL, e.g. "
            "postgresql://admin@db.lan/butler"
        )
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}"
    # A user or password given as a query parameter would win over the ones above.
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    query = [(k, v) for k, v in query if k not in ("user", "password", "passfile")]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/"), ""))


@dataclass
class Made:
    """What :func:`init_role` did."""

    #: The new role's password; None when the role was a worker's already (kept as it was).
    password: str | None
    #: Schemas whose queue the group was granted.
    granted: list[str] = field(default_factory=list)
    #: Schemas not migrated to the worker role's migration yet (their daemon is older).
    unmigrated: list[str] = field(default_factory=list)


async def init_role(conn: asyncpg.Connection, name: str, schemas: list[str]) -> Made:
    """Make the LOGIN role ``name`` (member of :data:`GROUP`, made if absent) with a new
    password, and grant the group the queue of each of ``schemas``. A role ``name`` that
    is a worker's already keeps its password: only the grants are made (a butler added to
    what its worker serves)."""
    check_role_name(name)
    member = await conn.fetchval(
        "SELECT pg_has_role(oid, $2, 'MEMBER') FROM pg_roles WHERE rolname = $1", name, GROUP
    )
    if member is False:
        raise UserError(
            f"--init-role: the role {name!r} exists already and is no worker's (not a member "
            f"of {GROUP}); pick another name"
        )
    # Only letters, digits, - and _: safe inside the literal (CREATE ROLE takes no parameter).
    made = Made(password=None if member else secrets.token_urlsafe(32))
    try:
        async with conn.transaction():
            if not await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", GROUP):
                await conn.execute(f"CREATE ROLE {GROUP} NOLOGIN")
            if made.password is not None:
                await conn.execute(
                    f"CREATE ROLE {quote_ident(name)} LOGIN PASSWORD '{made.password}'"
                    f" IN ROLE {GROUP}"
                )
            for schema in schemas:
                found = await conn.fetchval(
                    "SELECT to_regprocedure(format('%I.worker_role_grants()', $1::text))", schema
                )
                if found is None:
                    made.unmigrated.append(schema)
                    continue
                await conn.execute(f"SELECT {quote_ident(schema)}.worker_role_grants()")
                made.granted.append(schema)
    except asyncpg.InsufficientPrivilegeError as exc:
        raise UserError(
            f"--init-role: the database refused: {exc}; run it with the URL of a role that "
            "may make roles (CREATEROLE) and owns the butlers' schemas, e.g. the daemons' own"
        ) from None
    return made


async def reads_butler_rows(db: Database) -> bool:
    """Whether the role ``db`` connects as may read the butler's sessions (more than a
    worker needs: its URL is then every butler's whole database)."""
    return bool(
        await db.fetchval(
            "SELECT to_regclass('sessions') IS NOT NULL"
            " AND has_table_privilege(to_regclass('sessions'), 'SELECT')"
        )
    )


async def reaches_schema(db: Database) -> bool:
    """Whether the role ``db`` connects as may use the butler's schema (a worker's own
    role only once migration 020 or ``--init-role`` granted it the queue there). A
    schema not made yet counts as reached: its daemon never started, which the
    migration check says."""
    return bool(
        await db.fetchval(
            "SELECT to_regnamespace($1::text) IS NULL OR has_schema_privilege($1::text, 'USAGE')",
            db.schema,
        )
    )
