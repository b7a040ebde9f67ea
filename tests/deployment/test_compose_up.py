"""The compose deployment, built and run for real with the machine's container engine.

Podman builds the project's Dockerfile from base images made on this machine by
``butler images`` (stand_ins.py: no image registry is reachable here), and
podman-compose runs docker-compose.yml as shipped, reading those images from the
environment as from a person's .env, changed only by compose.stand-ins.yml: the
``general`` service running a butler whose runtime is a shell
command reporting where it runs. The jail is on as the compose file sets it
(BUTLER_SANDBOX=bwrap: the butler refuses to start without it), so a runtime
that reports an unprivileged user and bubblewrap as its first process ran in it.

One test, because the steps are one story on one published port (xdist would
split separate tests across workers, each with its own deployment).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.deployment.engine import STAND_IN_COMPOSE, compose_path, environment, podman, run
from tests.deployment.stand_ins import stand_ins
from tests.helpers import REPO, TEST_TOKEN, butler_client, get_json, wait_until

pytestmark = pytest.mark.slow

PROJECT = f"butler-deploy-{os.getpid()}"
IMAGE = "localhost/butler-deploy-test/butler:latest"
#: The general service's published port, which the test's butler serves on.
PORT = 8103
SCHEMA = "deploy_echo"
PASSWORD = "pw4tests"
#: The butler as compose starts it, for the refusals below.
BUTLER = ["butler", "run", "--config", "/app/test-roster/echo", "--port", str(PORT)]


class Deployment:
    """podman-compose on docker-compose.yml and the test's changes, as one project."""

    def __init__(self, tags: dict[str, str]) -> None:
        self.env = environment(
            # As `butler images` sets them in a person's .env.
            POSTGRES_IMAGE=tags["postgres"],
            NODE_IMAGE=tags["node"],
            PYTHON_BUILD_IMAGE=tags["builder"],
            PYTHON_IMAGE=tags["python"],
            BUTLER_TEST_IMAGE=IMAGE,
            POSTGRES_PASSWORD=PASSWORD,
            GRAFANA_ADMIN_PASSWORD="unused4tests",
            BUTLER_TOKEN=TEST_TOKEN,
            # Docker's image format keeps the Dockerfile's HEALTHCHECK (OCI's has none).
            BUILDAH_FORMAT="docker",
        )

    def __call__(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        files = ["-f", "docker-compose.yml", "-f", str(STAND_IN_COMPOSE.relative_to(REPO))]
        argv = [compose_path(), "-p", PROJECT, *files, *args]
        return run(argv, env=self.env, timeout=timeout)

    def container(self, service: str) -> str:
        names = podman(
            "ps",
            "--format",
            "{{.Names}}",
            "--filter",
            f"label=io.podman.compose.project={PROJECT}",
            "--filter",
            f"label=com.docker.compose.service={service}",
        ).stdout.split()
        assert len(names) == 1, f"{service}: containers {names}"
        return names[0]

    def healthy(self, service: str) -> None:
        """Run the service's own health check until it passes.

        Podman runs health checks from systemd timers, and this machine has no
        systemd; podman-compose before Podman 4.6 does not wait for
        ``service_healthy`` either. So the test does both, with the compose
        file's check.
        """
        name = self.container(service)

        def passes() -> bool:
            return podman("healthcheck", "run", name, check=False).returncode == 0

        wait_until(passes, timeout=180, interval=1)

    def up(self) -> None:
        self("up", "-d", "postgres")
        self.healthy("postgres")
        self("up", "-d", "general")
        wait_until(answering, timeout=180, interval=0.5)
        self.healthy("general")

    def sql(self, query: str) -> list[str]:
        done = podman(
            "exec",
            self.container("postgres"),
            "psql",
            "-U",
            "butler",
            "-d",
            "butler",
            "-Atc",
            query,
        )
        return done.stdout.splitlines()

    def leftovers(self) -> list[str]:
        """Containers, volumes, networks and pods of the project still on the machine."""
        listings = {
            "container": ("ps", "--all", "--format", "{{.Names}}"),
            "volume": ("volume", "ls", "--format", "{{.Name}}"),
            "network": ("network", "ls", "--format", "{{.Name}}"),
            "pod": ("pod", "ps", "--format", "{{.Name}}"),
        }
        found = []
        for kind, argv in listings.items():
            names = podman(*argv).stdout.split()
            found += [f"{kind} {name}" for name in names if name.startswith(PROJECT)]
        return found


def answering() -> bool:
    try:
        return get_json(f"http://127.0.0.1:{PORT}/health", timeout=2)[0] == 200
    except OSError:
        return False


async def _trigger(prompt: str) -> Any:
    async with butler_client(f"http://127.0.0.1:{PORT}/mcp", timeout=120) as client:
        return (await client.call_tool("trigger", {"prompt": prompt})).data


def trigger(prompt: str) -> dict[str, str]:
    """Trigger the butler; its runtime's report as a dict (uid, pid1, processes, prompt)."""
    result = asyncio.run(_trigger(prompt))
    assert result.success, result.error
    fields = dict(part.split("=", 1) for part in result.output.split(" ", 3))
    return fields


def zombies(container: str) -> list[str]:
    """The processes of ``container`` that ended and that nobody reaped: "pid (name)"."""
    count = (
        "import pathlib\n"
        "for stat in pathlib.Path('/proc').glob('[0-9]*/stat'):\n"
        "    fields = stat.read_text().rsplit(') ', 1)\n"
        "    if fields[1].startswith('Z'):\n"
        "        print(fields[0] + ')')\n"
    )
    return podman("exec", container, "python", "-c", count).stdout.splitlines()


def refusal(deployment: Deployment, schema: str, *security: str) -> str:
    """The butler's last line when started with only ``security`` of the service's settings
    (in ``schema`` of its own, so two can start side by side)."""
    done = podman(
        "run",
        "--rm",
        "--network",
        f"{PROJECT}_default",
        "--cap-drop",
        "ALL",
        *(part for option in security for part in ("--security-opt", option)),
        "-e",
        "BUTLER_SANDBOX=bwrap",
        "-e",
        f"BUTLER_TOKEN={TEST_TOKEN}",
        "-e",
        f"DATABASE_URL=postgresql://butler:{PASSWORD}@postgres:5432/butler",
        "-e",
        f"BUTLER_DB_SCHEMA={schema}",
        "-v",
        f"{REPO}/tests/deployment/roster:/app/test-roster:ro",
        IMAGE,
        *BUTLER,
        check=False,
        timeout=180,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr.strip().splitlines()[-1]


def port_is_free() -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", PORT)) != 0


@pytest.mark.timeout(3600)
def test_compose_runs_a_jailed_butler_that_keeps_its_sessions_and_leaves_nothing_behind():
    assert port_is_free(), f"127.0.0.1:{PORT} is taken: the general service publishes it"
    deployment = Deployment(stand_ins())
    started = time.monotonic()
    deployment("build", "general", timeout=2400)
    print(f"deployment: image built in {time.monotonic() - started:.0f} s")
    try:
        deployment.up()
        body = get_json(f"http://127.0.0.1:{PORT}/health")[1]
        assert (body["butler"], body["status"]) == ("echo", "ok")

        # The runtime ran as the image's unprivileged user, in the jail's pid namespace,
        # whose init is the jail's bridge, compiled into the image's wheel by its own stage.
        report = trigger("first, before the restart")
        assert report["uid"] == "10001"
        assert report["pid1"] == "bridge"
        assert report["prompt"] == "first, before the restart"
        rows = deployment.sql(f"SELECT status, runtime, trigger_source FROM {SCHEMA}.sessions")
        assert rows == ["succeeded|command|external"]
        # Nothing of the session is left in the container, not even a zombie to reap
        # (a jail's last processes may take a moment to end and be reaped).
        general = deployment.container("general")
        with contextlib.suppress(TimeoutError):
            wait_until(lambda: not zombies(general), timeout=30, interval=0.5)
        assert zombies(general) == []

        # Without either setting the compose file grants, the butler refuses to start,
        # naming the setting: Docker's default seccomp profile, then a masked /proc.
        # Two containers of their own, so they run side by side (13 to 15 s each).
        docker_default = f"{REPO}/deploy/seccomp/docker-default.json"
        with ThreadPoolExecutor(2) as pool:
            without_profile = pool.submit(
                refusal,
                deployment,
                "deploy_refusal_seccomp",
                f"seccomp={docker_default}",
                "systempaths=unconfined",
            )
            masked_proc = pool.submit(
                refusal,
                deployment,
                "deploy_refusal_proc",
                f"seccomp={REPO}/deploy/seccomp-bwrap.json",
            )
            line = without_profile.result()
            assert "seccomp=deploy/seccomp-bwrap.json" in line, line
            line = masked_proc.result()
            assert "systempaths=unconfined" in line, line

        # Containers removed and made again from the same volumes: the sessions are kept.
        deployment("down")
        assert not answering()
        deployment.up()
        assert trigger("second, after the restart")["prompt"] == "second, after the restart"
        prompts = deployment.sql(f"SELECT prompt FROM {SCHEMA}.sessions ORDER BY created_at")
        assert prompts == ["first, before the restart", "second, after the restart"]
    finally:
        deployment("down", "-v", timeout=300)
    assert deployment.leftovers() == []
    assert port_is_free()
