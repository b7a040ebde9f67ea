"""Loaded into a daemon by ``benchmarks/trigger_phases.py`` (``PYTHONPATH``): times its steps.

Each wrapped function records (name, start, end, cpu) with ``time.perf_counter``
(CLOCK_MONOTONIC, the same clock in every process of the machine, so the
client's timestamps line up) and ``cpu``, the CPU seconds the daemon's event
loop thread spent between start and end (``time.thread_time``: at one trigger
at a time, that step's own work and whatever else the loop did meanwhile,
the MCP request's handling); one line of JSON per trigger goes to the file
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
EVENTS: list[tuple[str, float, float, float]] = []


def _event(name: str, start: float, cpu: float) -> None:
    EVENTS.append((name, start, time.perf_counter(), time.thread_time() - cpu))


def _wrap(owner: object, attr: str, label: str | None = None) -> None:
    fn = getattr(owner, attr)
    owner_name = str(getattr(owner, "__name__", owner)).rsplit(".", 1)[-1]
    name = label or f"{owner_name}.{attr}"
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def timed(*args: object, **kwargs: object) -> object:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                _event(name, start, cpu)

    else:

        @functools.wraps(fn)
        def timed(*args: object, **kwargs: object) -> object:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                _event(name, start, cpu)

    setattr(owner, attr, timed)


def _wrap_block(owner: object, attr: str, name: str) -> None:
    fn = getattr(owner, attr)

    @contextlib.asynccontextmanager
    async def timed(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        start, cpu = time.perf_counter(), time.thread_time()
        async with fn(*args, **kwargs) as value:
            _event(name + " (enter)", start, cpu)
            try:
                yield value
            finally:
                start, cpu = time.perf_counter(), time.thread_time()
        _event(name + " (exit)", start, cpu)

    setattr(owner, attr, timed)


def _install() -> None:
    # Public seams only: butler's own functions and claude-agent-sdk's query(), never
    # a library's internals (whose names move between versions).
    import claude_agent_sdk

    import butler.runtimes.claude_code as claude
    import butler.spawner.execution as execution
    import butler.spawner.lifecycle as lifecycle
    import butler.spawner.sandboxing as sandboxing
    import butler.spawner.spawner as spawner
    import butler.spawner.workspace as workspace
    from butler.sandbox import jail, pool

    for owner, attr in [  # in the order a trigger meets them
        (spawner.Spawner, "start"),
        (lifecycle.SessionLifecycle, "create"),
        (execution, "memory_context"),
        (workspace.Workspace, "create"),
        (workspace.Workspace, "place"),
        (execution, "build_invocation"),
        (pool.JailPool, "take"),
        (sandboxing, "start_jail_for"),
        (claude, "cli_launcher"),
        (claude.CliGroup, "kill"),
        (jail.Jail, "close"),
        (workspace.Workspace, "remove"),
        (lifecycle.SessionLifecycle, "complete"),
    ]:
        _wrap(owner, attr)
    _wrap_block(execution, "jailed", "jailed")
    if os.environ.get("BUTLER_PHASES_FINE"):
        _install_fine(claude, sandboxing, jail)
    _stream(claude_agent_sdk)
    _trigger(spawner.Spawner)


def _install_fine(claude: object, sandboxing: object, jail: object) -> None:
    """``BUTLER_PHASES_FINE=1``: the steps inside the session path's steps too (a call made
    twice in a trigger shows the first to end)."""
    import butler.sandbox.egress as egress
    import butler.sandbox.policy as policy
    import butler.spawner.invocation as invocation

    for owner, attr in [
        (invocation, "build_runtime_env"),
        (invocation, "compose_system_prompt"),
        (invocation, "session_home"),
        (sandboxing, "session_request"),
        (sandboxing, "jail_policy"),
        (sandboxing, "jail_targets"),
        (jail, "new_jail_folder"),
        (egress.Egress, "start"),
        (egress.Egress, "close"),
        (claude, "session_files"),
        (claude, "write_files"),
        (claude, "runtime_env"),
        (jail.Jail, "bridged"),  # type: ignore[attr-defined]
        (policy.JailPolicy, "visible_path"),
        (jail, "program_paths"),
        (jail, "bwrap_argv"),
        (jail, "write_private"),
        (claude, "build_options"),
    ]:
        _wrap(owner, attr)


def _stream(sdk: object) -> None:
    """Each message ``query()`` yields (one per line the CLI writes that is not its
    protocol's own), timed from the call: the CLI's start and the handshake come first."""
    query = sdk.query  # type: ignore[attr-defined]

    async def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        start, cpu, n = time.perf_counter(), time.thread_time(), 0
        async for message in query(*args, **kwargs):
            kind = type(message).__name__
            _event(f"CLI message {n} {kind}:{getattr(message, 'subtype', '')}", start, cpu)
            n += 1
            yield message
        _event("query() ended", start, cpu)

    sdk.query = timed  # type: ignore[attr-defined]


#: ``BUTLER_PHASES_PROFILE``: a file for cProfile's statistics of the event loop's thread
#: from the trigger after the warm-up (``BUTLER_PHASES_FROM``) to the daemon's exit.
PROFILE = os.environ.get("BUTLER_PHASES_PROFILE")
PROFILE_FROM = int(os.environ.get("BUTLER_PHASES_FROM", "3"))


def _profile(seen: int) -> None:
    if not PROFILE or seen != PROFILE_FROM:
        return
    import atexit
    import cProfile

    # BUTLER_PHASES_PROFILE_CPU=1: each function's CPU (the thread's clock), not its wall
    # clock, which counts waits for the GIL and the scheduler on a busy machine.
    cpu_clock = os.environ.get("BUTLER_PHASES_PROFILE_CPU")
    profiler = cProfile.Profile(time.thread_time) if cpu_clock else cProfile.Profile()
    profiler.enable()
    atexit.register(lambda: (profiler.disable(), profiler.dump_stats(PROFILE)))


def _trigger(cls: type) -> None:
    trigger = cls.trigger
    seen = [0]

    async def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        _profile(seen[0])
        seen[0] += 1
        EVENTS.clear()
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return await trigger(self, *args, **kwargs)
        finally:
            _event("Spawner.trigger", start, cpu)
            _write()

    cls.trigger = timed


def _write() -> None:
    with open(OUT, "a") as out:  # type: ignore[arg-type]
        out.write(json.dumps(EVENTS) + "\n")


if OUT:
    _install()
