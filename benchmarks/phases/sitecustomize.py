"""Loaded into a daemon by ``benchmarks/trigger_phases.py`` (``PYTHONPATH``): times its steps.

Each wrapped function records (name, start, end) with ``time.perf_counter``
(CLOCK_MONOTONIC, the same clock in every process of the machine, so the
client's timestamps line up); one line of JSON per trigger goes to the file
named by ``BUTLER_PHASES``. Nothing here runs unless that variable is set.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import time

OUT = os.environ.get("BUTLER_PHASES")
EVENTS: list[tuple[str, float, float]] = []


def _wrap(owner: object, attr: str, label: str | None = None) -> None:
    fn = getattr(owner, attr)
    owner_name = str(getattr(owner, "__name__", owner)).rsplit(".", 1)[-1]
    name = label or f"{owner_name}.{attr}"
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def timed(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                EVENTS.append((name, start, time.perf_counter()))

    else:

        @functools.wraps(fn)
        def timed(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                EVENTS.append((name, start, time.perf_counter()))

    setattr(owner, attr, timed)


def _wrap_block(owner: object, attr: str, name: str) -> None:
    fn = getattr(owner, attr)

    @contextlib.asynccontextmanager
    async def timed(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        async with fn(*args, **kwargs) as value:
            EVENTS.append((name + " (enter)", start, time.perf_counter()))
            try:
                yield value
            finally:
                start = time.perf_counter()
        EVENTS.append((name + " (exit)", start, time.perf_counter()))

    setattr(owner, attr, timed)


def _install() -> None:
    import anyio
    from claude_agent_sdk._internal import query
    from claude_agent_sdk._internal.transport import subprocess_cli

    import butler.runtimes.claude_code as claude
    import butler.spawner.closing as closing
    import butler.spawner.execution as execution
    import butler.spawner.lifecycle as lifecycle
    import butler.spawner.sandboxing as sandboxing
    import butler.spawner.spawner as spawner
    import butler.spawner.workspace as workspace
    from butler.sandbox import jail

    for owner, attr in [  # in the order a trigger meets them
        (spawner.Spawner, "start"),
        (lifecycle.SessionLifecycle, "create"),
        (execution, "memory_context"),
        (workspace.Workspace, "create"),
        (workspace.Workspace, "place"),
        (execution, "build_invocation"),
        (sandboxing, "_take_warm"),
        (sandboxing, "start_jail_for"),
        (claude, "cli_launcher"),
        (subprocess_cli.SubprocessCLITransport, "connect"),
        (query.Query, "initialize"),
        (claude.CliGroup, "kill"),
        (jail.Jail, "close"),
        (workspace.Workspace, "remove"),
        (closing, "recorded_share"),
        (lifecycle.SessionLifecycle, "complete"),
    ]:
        _wrap(owner, attr)
    _wrap_block(execution, "jailed", "jailed")
    _stream(subprocess_cli.SubprocessCLITransport)
    _trigger(spawner.Spawner)
    del anyio


def _stream(transport: type) -> None:
    """Each line the CLI writes, timed from the SDK's first read."""
    read = transport._read_messages_impl

    async def timed(self):  # type: ignore[no-untyped-def]
        start, n = time.perf_counter(), 0
        async for message in read(self):
            kind = f"{message.get('type')}:{message.get('subtype') or ''}"
            EVENTS.append((f"CLI line {n} {kind}", start, time.perf_counter()))
            n += 1
            yield message
        EVENTS.append(("CLI stdout closed", start, time.perf_counter()))

    transport._read_messages_impl = timed


def _trigger(cls: type) -> None:
    trigger = cls.trigger

    async def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        EVENTS.clear()
        start = time.perf_counter()
        try:
            return await trigger(self, *args, **kwargs)
        finally:
            EVENTS.append(("Spawner.trigger", start, time.perf_counter()))
            _write()

    cls.trigger = timed


def _write() -> None:
    with open(OUT, "a") as out:  # type: ignore[arg-type]
        out.write(json.dumps(EVENTS) + "\n")


if OUT:
    _install()
