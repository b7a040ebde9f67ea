"""What the jail adds to a session's start: a runtime run bare, then run jailed.

Each run starts a runtime that prints one line and exits, through the same
process runner sessions use, and times from the call until its line
arrives. Jailed runs include everything the session path adds: the
session's egress proxy started on its Unix socket, the launch script and
its argument file written, bubblewrap building the namespaces and mounts,
the bridge listening on the jail's loopback, and the
proxy closed again. Bare and jailed runs alternate; what the jail adds is
each jailed run less the bare run just before it (median of those
differences), and the difference of the two medians beside it.

Then the launch of a runtime the way claude-agent-sdk starts one (handed the
daemon's whole environment), both ways side by side: a Python launcher that
filters the environment and then starts the jail (before), and the jail's
own launch script doing it (now). Then that launch in a jail of its own
against one in a warm jail of a pool (made before the clock starts, as the
pool makes them between sessions), alternating.

Last, what holding a session's bounds costs its bridge while the session runs: the
/proc watcher against nothing watching, which is what the bridge spends where the
session's cgroup holds them (docs/security.md, "Per-session bounds").

    .venv/bin/python benchmarks/jail_start.py [--runs 30]

The machine's load matters a great deal (process starts are most of it):
the minimum is the figure on an idle machine, the median the one under load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "benchmarks"))

from cpu import Clocks, adopt_orphans  # noqa: E402
from rows import paired_differences  # noqa: E402

from butler.runtimes.launcher import write_launcher  # noqa: E402
from butler.runtimes.process import RuntimeProcess  # noqa: E402
from butler.sandbox import JailPolicy, probe  # noqa: E402
from butler.sandbox.egress import Target  # noqa: E402
from butler.sandbox.jail import Jail, start_jail  # noqa: E402
from butler.sandbox.policy import BRIDGE_PATH, bwrap_argv  # noqa: E402
from butler.sandbox.pool import JailPool, Shape, WarmJail  # noqa: E402

RUNTIME = ["/bin/echo", "ready"]


async def first_line(argv: list[str], folder: Path, env: dict[str, str]) -> float:
    """Milliseconds from the call until the runtime's first line of output."""
    seen: list[float] = []
    started = time.perf_counter()
    await RuntimeProcess().run(
        argv,
        env=env,
        cwd=folder,
        timeout_s=30,
        on_line=lambda _: seen.append(time.perf_counter()),
    )
    return (seen[0] - started) * 1000


async def bare(folder: Path) -> float:
    return await first_line(RUNTIME, folder, {"PATH": "/usr/bin:/bin"})


async def measure(runs: int) -> None:
    reason = probe()
    if reason:
        raise SystemExit(f"no jail on this machine: {reason}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for _ in range(3):  # warm the page cache for both paths
            await bare(folder)
            await timed_jail(folder)
        plain: list[float] = []
        boxed: list[float] = []
        for _ in range(runs):
            plain.append(await bare(folder))
            boxed.append(await timed_jail(folder))
    report("bare runtime", plain)
    report("jailed runtime", boxed)
    # Each jailed run minus the bare run made just before it, never sorted lists paired by
    # rank (which pairs the fastest of each, taken at different moments).
    report("added by the jail", paired_differences(boxed, plain))
    print(
        f"{'':>20}  difference of the medians: "
        f"{statistics.median(boxed) - statistics.median(plain):5.1f} ms"
    )
    await sdk_launches(runs)
    await warm_launches(runs)
    for label, spent in bounds_cost().items():
        print(f"bounds over a {HELD_S:.0f} s session of 3 processes, {label}: {spent:5.1f} ms CPU")
    for adopt in (False, True):
        for name, spent in (await accounting(adopt=adopt)).items():
            print(
                f"a jailed grandchild burning {BURN_MS} ms, {name}"
                f"{', its orphans adopted' if adopt else ''}: reaped children's CPU "
                f"{spent.children * 1000:4.0f} ms, machine-wide less this process "
                f"{spent.machine_less_client * 1000:4.0f} ms"
            )


async def sdk_launch(folder: Path, exact: bool) -> float:
    """Milliseconds to run ``/bin/true`` jailed as claude-agent-sdk starts its CLI.

    The SDK hands the CLI the daemon's whole environment. ``exact``: the jail's
    launch script and bubblewrap keep only the built one (what sessions do);
    otherwise a Python launcher filters it first and then starts the jail
    (what they did before), one interpreter start more.
    """
    work = Path(tempfile.mkdtemp(dir=folder))
    policy = JailPolicy(writable=(work,), cwd=work)
    jail = await start_jail(policy, frozenset({Target("127.0.0.1", 9)}))
    try:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(work), **jail.env()}
        sdk_vars = ["CLAUDE_CODE_ENTRYPOINT"]
        if exact:
            argv = jail.wrap_exact(["/bin/true"], env, sdk_vars, work / "runtime.pid")
        else:
            wrapped = jail.wrap(["/bin/true"])
            argv = [str(write_launcher(work, wrapped, passthrough=[*env, *sdk_vars]))]
        merged = {**os.environ, **env, "CLAUDE_CODE_ENTRYPOINT": "sdk-py"}
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*argv, cwd=work, env=merged)
        if await proc.wait() != 0:
            raise SystemExit(f"the jailed launch failed with status {proc.returncode}")
        return (time.perf_counter() - started) * 1000
    finally:
        await jail.close()


async def sdk_launches(runs: int) -> None:
    """The SDK's launch path both ways, alternating, with each one's CPU (children)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        times: dict[bool, list[float]] = {False: [], True: []}
        cpu: dict[bool, float] = {False: 0.0, True: 0.0}
        for i in range(runs + 3):
            for exact in (False, True):
                before = children_cpu_ms()
                elapsed = await sdk_launch(folder, exact)
                if i >= 3:  # the first rounds warm the page cache
                    times[exact].append(elapsed)
                    cpu[exact] += children_cpu_ms() - before
    for exact, label in ((False, "launcher + jail"), (True, "jail script only")):
        report(label, times[exact])
        print(f"{'':>20}  CPU of its processes: {cpu[exact] / runs:5.1f} ms per launch")


async def warm_launches(runs: int) -> None:
    """The SDK's launch of ``/bin/echo`` in a jail of its own and in a warm one, alternating."""
    times: dict[str, list[float]] = {"own jail": [], "warm jail": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "homes").mkdir()
        (folder / "work").mkdir()
        policy = JailPolicy(writable=(folder / "work",), cwd=Path("/"))
        targets = frozenset({Target("127.0.0.1", 9)})
        pool = JailPool(1)
        pool.learn(Shape(policy, targets, RUNTIME[0], folder / "homes"))
        for i in range(runs + 3):
            for label in times:
                elapsed = await _launch_in(pool, policy, targets, label == "warm jail")
                if i >= 3:
                    times[label].append(elapsed)
        await pool.close()
    for label, values in times.items():
        report(label, values)


async def _launch_in(
    pool: JailPool, policy: JailPolicy, targets: frozenset[Target], warm: bool
) -> float:
    """Milliseconds from the jail's launch script's start until the runtime's first line
    (a warm jail: taken from ``pool`` first, off the clock, once the pool has one ready)."""
    for _ in range(500):
        if pool.ready or not warm:
            break
        await asyncio.sleep(0.01)
    taken = pool.take(policy, targets) if warm else None
    if taken is not None:
        base = taken.jail
        jail: Jail = WarmJail(
            base.policy,
            base.egress,
            base.proxy_port,
            base.forwards,
            base.bwrap,
            warm=taken,
            pool=pool,
        )
    else:
        jail = await start_jail(policy, targets)
    try:
        env = {"PATH": "/usr/bin:/bin", **jail.env()}
        work = jail.policy.writable[0]
        argv = jail.wrap_exact(RUNTIME, env, [], work / "runtime.pid")
        started = time.perf_counter()
        seen: list[float] = []
        await RuntimeProcess().run(
            argv,
            env=env,
            cwd=Path("/"),
            timeout_s=30,
            on_line=lambda _: seen.append(time.perf_counter()),
        )
        return (seen[0] - started) * 1000
    finally:
        await jail.close()


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


async def timed_jail(folder: Path) -> float:
    """Milliseconds from starting the session's proxy until the jailed runtime's first line."""
    started = time.perf_counter()
    policy = JailPolicy(writable=(folder,), cwd=folder)
    jail = await start_jail(policy, frozenset({Target("127.0.0.1", 9)}))
    try:
        env = {"PATH": "/usr/bin:/bin", **jail.env()}
        seen: list[float] = []
        await RuntimeProcess().run(
            jail.wrap(RUNTIME),
            env=env,
            cwd=folder,
            timeout_s=30,
            on_line=lambda _: seen.append(time.perf_counter()),
        )
        return (seen[0] - started) * 1000
    finally:
        await jail.close()


#: How long the session of :func:`bounds_cost` runs.
HELD_S = 5.0


def bounds_cost(rounds: int = 3) -> dict[str, float]:
    """CPU of a jail's processes over a session of three sleeping processes, median of
    ``rounds``: its bounds held by the bridge's /proc watcher, and by nothing watching
    (what the bridge spends where a cgroup holds them: its thread sleeps in poll)."""
    spent: dict[str, list[float]] = {"the /proc watcher": [], "nothing watching": []}
    for _ in range(rounds):
        for label, extra in zip(spent, (["limits=512,2048"], []), strict=True):
            before = children_cpu_ms()
            argv = ["bwrap", *bwrap_argv(JailPolicy())[1:], "--as-pid-1", "--"]
            argv += [str(BRIDGE_PATH), "/nowhere.sock", "3128", "", *extra, "--", "/bin/sh", "-c"]
            argv += [f"sleep {HELD_S} & sleep {HELD_S} & sleep {HELD_S}; wait"]
            subprocess.run(argv, check=True)
            spent[label].append(children_cpu_ms() - before)
    return {label: statistics.median(values) for label, values in spent.items()}


def report(label: str, values: list[float]) -> None:
    values = sorted(values)
    print(
        f"{label:>20}: median {statistics.median(values):6.1f} ms   "
        f"min {values[0]:6.1f} ms   p90 {values[int(len(values) * 0.9) - 1]:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(measure(args.runs))


#: A grandchild that burns CPU until it has used ``ms`` of it (its own clock).
BURN_MS = 300
BURN = "import time,sys\nend=float(sys.argv[1])/1000\nwhile time.process_time()<end: pass\n"


async def accounting(burn_ms: int = BURN_MS, adopt: bool = False) -> dict[str, Clocks]:
    """Whether a jailed grandchild's CPU reaches the launching process's accounting.

    Two jailed runs of a shell whose child burns ``burn_ms`` of CPU: one waits
    for it, one leaves it running in the background and exits (it is killed
    when the jail's pid namespace ends). Each gives every clock over the run:
    what the kernel accounted to this process's reaped children, and the
    machine's busy time less this process's own. With ``adopt`` this process
    is the subreaper of the jails' orphans and reaps them, as the trigger
    benchmark does; without, it sees what the daemon sees.
    """
    adopt_orphans(adopt)
    python = "/usr/bin/python3"
    cases = {
        "waited for": f'{python} -c "$0" {burn_ms}',
        "left behind": f'{python} -c "$0" 100000 & sleep {burn_ms / 1000:.3f}',
    }
    found: dict[str, Clocks] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, line in cases.items():
            policy = JailPolicy(writable=(folder,), cwd=folder)
            jail = await start_jail(policy, frozenset())
            try:
                before = Clocks.read()
                await RuntimeProcess().run(
                    ["/bin/sh", "-c", line, BURN],
                    env={"PATH": "/usr/bin:/bin"},
                    cwd=folder,
                    timeout_s=30,
                    on_line=lambda _: None,
                    sandbox=jail,
                )
                await asyncio.sleep(0.2)  # the namespace's teardown, in the kernel
                found[name] = Clocks.read() - before
            finally:
                await jail.close()
    return found


if __name__ == "__main__":
    main()
