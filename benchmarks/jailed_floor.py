"""The jailed floor: the no-op CLI launched into a session's jail by a minimal program.

What a jailed trigger must cost at least, measured in the same run as the
triggers: the same no-op Claude CLI (``tests/runtimes/fake_claude.py``), spoken
to with the SDK's protocol as :func:`spawner.sdk_direct` does, but started
through bubblewrap with a session's policy, built by butler's own public
functions: :func:`~butler.spawner.sandboxing.session_request` for the butler's
session (its workspace, home and folder writable, the roster's ``shared/``
read-only, ``butler.toml`` protected, ``.git`` held), :func:`~butler.sandbox.jail_policy`
and :func:`~butler.sandbox.policy.bwrap_argv` for the namespaces and mounts,
:func:`~butler.sandbox.seccomp.filter_program` for the system-call filter, and
an egress proxy (:class:`~butler.sandbox.egress.Egress`) listening on its Unix
socket, bound into the jail as a session's is.

Nothing else: no daemon, no database, no launch script or options file, no
bridge (the CLI runs as bubblewrap's child), no cgroup. Each launch makes its
own workspace, home and egress socket, as a session does, and removes them.

    .venv/bin/python benchmarks/jailed_floor.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import NOOP_CLI, median, percentile

from butler.config import ButlerConfig
from butler.config.loading import load_config
from butler.runtimes.base import Invocation
from butler.sandbox import jail_policy, jail_targets
from butler.sandbox.egress import Egress
from butler.sandbox.policy import EGRESS_SOCKET, JAIL_HOME, bwrap_argv, program_paths
from butler.sandbox.seccomp import filter_program
from butler.spawner.sandboxing import session_request
from tests.helpers import write_butler


class JailedFloor:
    """Launches of the no-op CLI in a session's jail of one butler (``config``)."""

    def __init__(self, config: ButlerConfig, root: Path) -> None:
        self.config = config
        self.root = root
        self.bwrap = shutil.which("bwrap") or "bwrap"
        program = filter_program()
        self.seccomp: Path | None = None
        if program is not None:
            self.seccomp = root / "filter.bpf"
            self.seccomp.write_bytes(program)
        self.search = "/usr/local/bin:/usr/bin:/bin"
        self.exe, self.roots = program_paths(str(NOOP_CLI), self.search)

    def _argv(self, workdir: Path, home: Path, egress_dir: Path, seccomp: int | None) -> list[str]:
        invocation = Invocation(
            prompt="",
            system_prompt="",
            cwd=self.config.config_dir,
            workdir=workdir,
            home=home,
            env={"PATH": self.search},
            mcp=None,
            max_turns=1,
            timeout_s=60,
        )
        request = session_request(self.config, invocation)
        policy = jail_policy(self.config.butler.sandbox, request)
        jail_targets(self.config.butler.sandbox, request)  # the allow-list a session computes
        policy = replace(policy, egress_dir=egress_dir).with_read_only(*self.roots)
        argv = bwrap_argv(policy, self.bwrap)
        env = {
            "PATH": self.search,
            "HOME": str(JAIL_HOME),
            "CLAUDE_CONFIG_DIR": f"{JAIL_HOME}/.claude",
        }
        argv += ["--clearenv", *(p for k, v in env.items() for p in ("--setenv", k, v))]
        if seccomp is not None:  # bubblewrap loads it before the jail's first process
            argv += ["--seccomp", str(seccomp)]
        return [*argv, "--", self.exe]

    async def launch(self, i: int) -> None:
        """One launch: its folders and egress socket made, the CLI spoken to, all removed."""
        place = Path(tempfile.mkdtemp(prefix="floor-", dir=self.root))
        workdir, home, egress_dir = place / "work", place / "home", place / "egress"
        for folder in (workdir, home, egress_dir):
            folder.mkdir(mode=0o700)
        egress = await Egress(egress_dir / EGRESS_SOCKET, frozenset(), f"floor {i}").start()
        fds = [] if self.seccomp is None else [os.open(self.seccomp, os.O_RDONLY)]
        try:
            argv = self._argv(workdir, home, egress_dir, fds[0] if fds else None)
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                pass_fds=fds,
            )
            request = {"type": "control_request", "request_id": "r1", "request": {}}
            user = {"type": "user", "message": {"role": "user", "content": f"jailed {i}"}}
            payload = (json.dumps(request) + "\n" + json.dumps(user) + "\n").encode()
            out, _ = await proc.communicate(payload)
        finally:
            for fd in fds:
                os.close(fd)
            await egress.close()
            await asyncio.to_thread(shutil.rmtree, place, True)
        if b'"result"' not in out:
            raise SystemExit(f"the jailed no-op CLI gave no result line (exit {proc.returncode})")


def floor_for(folder: Path, root: Path) -> JailedFloor:
    """The jailed floor of the butler in ``folder`` (written by ``write_butler``)."""
    return JailedFloor(load_config(folder), root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_butler(
            Path(tmp) / "roster", "floor", port=1, runtime={"cli_path": str(NOOP_CLI)}
        )
        floor = floor_for(folder, Path(tmp))
        took = []
        for i in range(args.runs + 2):
            started = time.perf_counter()
            asyncio.run(floor.launch(i))
            took.append((time.perf_counter() - started) * 1000)
        took = took[2:]
    print(f"jailed floor: p50 {median(took):.1f} ms, p95 {percentile(took, 95):.1f} ms")


if __name__ == "__main__":
    main()
