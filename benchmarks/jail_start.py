"""What the jail adds to a session's start: a runtime run bare, then run jailed.

Each run starts a runtime that prints one line and exits, through the same
process runner sessions use, and times from the call until its line
arrives. Jailed runs include everything the session path adds: the
session's egress proxy started on its Unix socket, the launch script and
its argument file written, bubblewrap building the namespaces and mounts,
the bridge (a Python process) listening on the jail's loopback, and the
proxy closed again. The goal is under 30 ms.

    .venv/bin/python benchmarks/jail_start.py [--runs 30]

The machine's load matters a great deal (process starts are most of it):
the minimum is the figure on an idle machine, the median the one under load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from butler.runtimes.process import RuntimeProcess  # noqa: E402
from butler.sandbox import JailPolicy, probe  # noqa: E402
from butler.sandbox.egress import Target  # noqa: E402
from butler.sandbox.jail import start_jail  # noqa: E402

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
    added = [b - p for b, p in zip(sorted(boxed), sorted(plain), strict=True)]
    report("added by the jail", added)


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


if __name__ == "__main__":
    main()
