"""Interactive builders count against [butler.builders] max_running, and a role is no path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import Builders, write_builder_butler
from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, free_port, get_json

pytestmark = pytest.mark.slow  # a real server, and runtimes as processes

repo = builder_fixtures.repo
tmux_socket = builder_fixtures.tmux_socket


@pytest.fixture
def one_builder(
    roster: Path, schema_name: str, repo: Path, tmux_socket: str, _isolated_data_dir: Path
) -> Iterator[Builders]:
    """A builder butler that lets one interactive builder run at a time."""
    port = free_port()
    extra = "\n[butler.builders]\nmax_running = 1\n"
    folder = write_builder_butler(roster, schema_name, port, extra=extra)
    env = {"BUTLER_TMUX_SOCKET": tmux_socket, "BUTLER_DATA_DIR": str(_isolated_data_dir)}
    env["ANTHROPIC_API_KEY"] = "sk-test"
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Builders(daemon, folder, repo, tmux_socket, schema_name, _isolated_data_dir)


def test_builders_over_the_limit_are_refused_and_shown_in_status(one_builder: Builders):
    first = one_builder.spawn("--shell")
    one_builder.wait_screen(first, "agent> ")
    refused = one_builder.cli("builders", "spawn", "Fix the login bug")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "butler: error: builder refused: 1 interactive builders running and "
        "[butler.builders] max_running = 1; finish one or raise the limit"
    ]
    status = get_json(f"{one_builder.daemon.url}/api/status")[1]
    assert (status["builders_running"], status["builders_max_running"]) == (1, 1)


@pytest.mark.parametrize("role", ["/etc/passwd", "../x"])
def test_a_role_that_is_a_path_is_refused(one_builder: Builders, role: str):
    refused = one_builder.cli("builders", "spawn", "--shell", "--role", role)
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert "\n" not in line and f"--role {role!r}" in line and "no path" in line
    assert "root:" not in line
