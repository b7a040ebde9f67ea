"""``butler worker --init-role``: a worker's own database role, and the URL to give it.

Run once by whoever holds the daemons' URL; the worker then connects with the
printed URL, whose role reaches only the served butlers' job queues
(:mod:`butler.store.worker_role`, docs/security.md). The password is shown
once, never stored. Run again for a role that exists, it grants the queues of
the butlers named now and keeps the password.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from butler.config import ButlerConfig
from butler.errors import UserError
from butler.store.db import redact_dsn
from butler.store.worker_role import GROUP, check_role_name, init_role, worker_url


async def make_role(configs: Sequence[ButlerConfig], database_url: str, name: str) -> str:
    """Make the role ``name`` for a worker serving ``configs``; what to tell the user."""
    check_role_name(name)
    if not database_url:
        raise UserError(
            "butler worker --init-role: no database: give --database-url (or DATABASE_URL) "
            "naming the PostgreSQL the butlers' daemons use, with their role"
        )
    worker_url(database_url, name, "-")  # a URL it cannot rewrite is refused before any change
    try:
        conn = await asyncpg.connect(database_url, timeout=10)
    except (OSError, asyncpg.PostgresError, TimeoutError, ValueError) as exc:
        raise UserError(
            f"butler worker --init-role: cannot connect to PostgreSQL at "
            f"{redact_dsn(database_url)}: {exc}"
        ) from None
    try:
        schemas = sorted({config.db_schema for config in configs})
        made = await init_role(conn, name, schemas)
    finally:
        await conn.close()
    by_schema = {config.db_schema: config.name for config in configs}
    if made.password is None:
        lines = [f"The database role {name} exists already (a worker's): its password is kept."]
    else:
        lines = [f"Made the database role {name} (member of {GROUP})."]
    if made.granted:
        served = ", ".join(f"{by_schema[s]} ({s})" for s in made.granted)
        lines.append(f"It reaches the job queues of: {served}.")
    if made.unmigrated:
        older = ", ".join(by_schema[s] for s in made.unmigrated)
        lines.append(
            f"Not yet of: {older} (their daemons are older than this butler: upgrade and "
            "restart them; their start grants the queue)."
        )
    if made.password is None:
        return "\n".join(lines)
    lines += [
        "Start the worker with this URL (its password is shown only now; the host is as "
        "in the URL given here, so change it if the worker sees the database elsewhere):",
        "",
        f"  {worker_url(database_url, name, made.password)}",
    ]
    return "\n".join(lines)
