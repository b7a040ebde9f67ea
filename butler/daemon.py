"""Assembles one butler over its open database: its stores, spawner and features.

Its sessions' runtime side (adapter, stores, jail mode) is assembled by
:meth:`butler.spawner.execution.Execution.over`, the one way a daemon and a
worker both build it. Serving is :func:`butler.roster.up`'s: ``butler run`` is
a roster of one.
"""

from __future__ import annotations

import logging

from butler.builders.manager import BuilderManager
from butler.config import ButlerConfig
from butler.context import ButlerContext
from butler.notify import Notifier
from butler.sandbox import look_after_butler_folder
from butler.scheduler import Scheduler
from butler.spawner import preflight
from butler.spawner.execution import Execution
from butler.spawner.recovery import recover
from butler.spawner.spawner import Spawner
from butler.store.db import Database
from butler.store.deliveries import DeliveryStore
from butler.store.schedules import ScheduleStore
from butler.store.state import StateStore

log = logging.getLogger("butler.daemon")


async def assemble(config: ButlerConfig, db: Database) -> ButlerContext:
    """The butler's stores and spawner over an open database."""
    runs = Execution.over(config, db)
    sessions, credentials = runs.sessions, runs.credentials
    spawner = Spawner(runs)
    await recover(spawner)
    if spawner.sandbox == "bwrap":  # what jails of an earlier daemon left, disarmed
        await look_after_butler_folder(config.config_dir)
    await preflight.check(config, runs.adapter, credentials)
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
