"""A daemon as a person meets it from a second terminal: refused twice, stopped, restarted.

``butler run`` of a butler already served names the process serving it and the
command that stops it, before anything slow starts (how quickly is measured in
``benchmarks/cli.py``); ``butler stop`` and ``butler restart`` find that process
by the note it leaves in the butler's data folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import REPO, DaemonProcess, free_port, get_json, wait_until, write_butler

pytestmark = pytest.mark.slow


def butler(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None):
    """``butler ARGS`` as a person types it; its output and exit status."""
    return subprocess.run(
        [sys.executable, "-m", "butler.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=240,
    )


def test_a_second_start_names_the_daemon_serving_and_the_command_that_stops_it(roster, schemas):
    folder = write_butler(roster, "keeper", port=free_port(), schema=schemas[0])
    with DaemonProcess(folder, port=free_port(), database_url=TEST_DSN) as first:
        assert first.proc is not None
        pid = first.proc.pid
        for argv in (["run", "-c", str(folder)], ["run", "-c", str(folder), "--port", "1"],
                     ["up", "--roster", str(roster)]):  # fmt: skip
            again = butler(*argv)
            assert again.returncode == 2, again.stderr
            line = again.stderr.strip()
            assert line.startswith(f"butler: error: keeper is already running (pid {pid}, ")
            assert f"serving {first.url} since " in line and "by butler run" in line
            assert line.endswith(f"stop it with: butler stop -c {folder}")
            assert "\n" not in line  # nothing else was started, nothing else said


def test_a_port_held_by_another_butler_names_that_butler_and_how_to_stop_it(roster, schemas):
    first = write_butler(roster, "keeper", port=free_port(), schema=schemas[0])
    second = write_butler(roster, "scribe", port=free_port(), schema=schemas[1])
    with DaemonProcess(first, port=free_port(), database_url=TEST_DSN) as serving:
        assert serving.proc is not None
        taken = butler("run", "-c", str(second), "--port", str(serving.port))
    assert taken.returncode == 2
    line = taken.stderr.strip()
    assert line.startswith(
        f"butler: error: scribe: port {serving.port} is taken by butler keeper "
        f"(pid {serving.proc.pid}, serving {serving.url}"
    )
    assert line.endswith(
        f"stop it with: butler stop -c {first}, or choose --port N (or BUTLER_PORT)"
    )


def test_butler_stop_drains_the_daemon_and_a_second_stop_says_it_is_not_running(roster, schemas):
    folder = write_butler(roster, "keeper", port=free_port(), schema=schemas[0])
    daemon = DaemonProcess(folder, port=free_port(), database_url=TEST_DSN).start()
    assert daemon.proc is not None
    stopped = butler("stop", cwd=folder)  # inside the butler's folder, -c may be left out
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"stopped keeper (pid {daemon.proc.pid})\n"
    assert daemon.proc.wait(timeout=5) == 0  # it had stopped, as on Ctrl-C
    assert "shutting down" in daemon.logs()
    again = butler("stop", "-c", str(folder))
    assert (again.returncode, again.stdout) == (0, "keeper is not running\n")
    restart = butler("restart", "-c", str(folder))
    assert restart.returncode == 2
    assert restart.stderr == (
        f"butler: error: keeper is not running; start it with: butler run -c {folder}\n"
    )


def test_butler_restart_starts_the_daemon_again_in_its_own_process_reading_its_folder_anew(
    roster, schemas
):
    folder = write_butler(roster, "keeper", port=free_port(), schema=schemas[0])
    with DaemonProcess(folder, port=free_port(), database_url=TEST_DSN) as daemon:
        assert daemon.proc is not None
        toml = folder / "butler.toml"
        toml.write_text(toml.read_text().replace("[butler]\n", '[butler]\ndescription = "new"\n'))

        def noticed() -> bool:
            return get_json(f"{daemon.url}/api/status")[1].get("restart_needed") is True

        wait_until(noticed, timeout=30)
        done = butler("restart", "-c", str(folder))
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"restarted keeper (pid {daemon.proc.pid}): serving {daemon.url}\n"
        assert daemon.proc.poll() is None  # the same process, serving again
        status, body = get_json(f"{daemon.url}/api/status")
        assert status == 200 and body["restart_needed"] is False
        assert daemon.logs().count("butler serving") == 2
    assert daemon.proc.returncode == 0


def test_a_roster_served_by_up_is_stopped_as_one_and_a_member_alone_is_refused(
    roster, schemas, tmp_path
):
    for name, schema in zip(("alpha", "beta"), schemas, strict=False):
        write_butler(roster, name, port=free_port(), schema=schema)
    log = (tmp_path / "up.log").open("wb")
    env = {**os.environ, "BUTLER_ALLOW_ROOT": "1"}
    argv = [sys.executable, "-m", "butler.cli", "up", "--roster", str(roster)]
    up = subprocess.Popen([*argv, "--database-url", TEST_DSN], stdout=log, stderr=log, env=env)
    log.close()
    try:
        wait_until(lambda: butler("stop", "-c", str(roster / "alpha")).returncode == 2, 90)
        alone = butler("stop", "-c", str(roster / "alpha"))
        assert alone.stderr == (
            f"butler: error: alpha is served by butler up (pid {up.pid}) with beta; "
            f"stop them all with: butler stop --roster {roster}\n"
        )
        stopped = butler("stop", "--roster", str(roster))
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout == f"stopped alpha, beta (pid {up.pid})\n"
        assert up.wait(timeout=5) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()


def test_the_builder_commands_old_spellings_still_work_and_say_their_new_one(roster):
    folder = write_butler(roster, "keeper", port=free_port())  # its daemon is down
    old = butler("stop", "task-a7f3-x9k2", "-c", str(folder))
    assert old.stderr.splitlines()[0] == (
        "butler: `butler stop ID` is now `butler builders stop ID`; the old spelling will be "
        "removed in a later release"
    )
    assert "butler 'keeper' is not running at" in old.stderr  # the builder's stop ran
    spawn = butler("spawn", "--help")
    assert spawn.returncode == 0 and "Delegate work to a builder" in spawn.stdout
    assert "`butler spawn` is now `butler builders spawn`" in spawn.stderr
    listed = butler("builders", "-c", str(folder))  # the list, as before
    assert listed.returncode == 2 and "butler 'keeper' is not running at" in listed.stderr
    top = butler("--help")
    for panel in ("Daemon", "Sessions", "Builders", "Channels", "Setup"):
        assert f"─ {panel} " in top.stdout
    assert "│ spawn " not in top.stdout  # the old spellings are listed nowhere


def test_commands_reach_the_daemon_where_it_serves_not_where_butler_toml_says(roster, schemas):
    folder = write_butler(roster, "keeper", port=free_port(), schema=schemas[0])
    with DaemonProcess(folder, port=free_port(), database_url=TEST_DSN) as daemon:  # --port
        listed = butler("sessions", "-c", str(folder))
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("no sessions yet")
        token = butler("token", "-c", str(folder))
        assert f"dashboard: {daemon.url}/?token=" in token.stderr
