"""Assembles one butler: its database (opened and migrated), its stores and spawner.

Serving is :func:`butler.roster.up`'s: ``butler run`` is a roster of one.
"""

from __future__ import annotations

import logging

from butler.builders.manager import BuilderManager
from butler.config import ButlerConfig
from butler.context import ButlerContext
from butler.notify import Notifier
from butler.runtimes.registry import get_adapter
from butler.sandbox import look_after_butler_folder
from butler.scheduler import Scheduler
from butler.spawner import preflight
from butler.spawner.recovery import recover
from butler.spawner.spawner import Spawner
from butler.store.credentials import CredentialStore
from butler.store.db import Database
from butler.store.deliveries import DeliveryStore
from butler.store.memory import PostgresMemory
from butler.store.opening import OpenDatabase, open_store
from butler.store.schedules import ScheduleStore
from butler.store.sessions import SessionStore
from butler.store.state import StateStore

log = logging.getLogger("butler.daemon")


async def open_database(
    config: ButlerConfig, dsn: str | None = None, *, serving: bool = False
) -> OpenDatabase:
    """The butler's database, opened by :func:`butler.store.opening.open_store`."""
    return await open_store(config.glance(), dsn, serving=serving)


async def assemble(config: ButlerConfig, db: Database) -> ButlerContext:
    """The butler's stores and spawner over an open database."""
    sessions = SessionStore(db, config.butler.max_output_bytes)
    memory = PostgresMemory(db, config.butler.memory.max_episodes)
    adapter = get_adapter(config.runtime.type, config.runtime, config.roster_dir)
    credentials = CredentialStore(db)
    spawner = Spawner(config, adapter, sessions, credentials, memory=memory)
    await recover(spawner)
    if spawner.sandbox == "bwrap":  # what jails of an earlier daemon left, disarmed
        await look_after_butler_folder(config.config_dir)
    await preflight.check(config, adapter, credentials)
    builders = BuilderManager(config, spawner, sessions)
    await builders.adopt_survivors()
    notifier = Notifier(config, DeliveryStore(db), credentials)
    return ButlerContext(
        config=config,
        db=db,
        state=StateStore(db),
        sessions=sessions,
        spawner=spawner,
        scheduler=Scheduler(config.butler.schedule, ScheduleStore(db), spawner, notifier=notifier),
        builders=builders,
        notifier=notifier,
    )
