"""A running butler says when its butler.toml changed: a restart applies it."""

from __future__ import annotations

import json

from tests.helpers import TEST_TOKEN, DaemonProcess, free_port, get_json, wait_until, write_butler


def status(daemon: DaemonProcess) -> dict:
    code, body = get_json(f"{daemon.url}/api/status", timeout=5, token=TEST_TOKEN)
    assert code == 200, body
    return body


def test_a_changed_butler_toml_is_a_warning_once_and_restart_needed(roster, schema_name, pg_dsn):
    port = free_port()
    folder = write_butler(roster, "keeper", port=port, schema=schema_name)
    with DaemonProcess(folder, port=port, database_url=pg_dsn) as daemon:
        assert status(daemon)["restart_needed"] is False
        toml = folder / "butler.toml"
        toml.write_text(toml.read_text() + "\n[butler.memory]\nenabled = false\n")
        wait_until(lambda: status(daemon)["restart_needed"], timeout=60)
        wait_until(lambda: "butler.toml changed since start" in daemon.logs(), timeout=30)
        warnings = [line for line in daemon.logs().splitlines() if "butler.toml changed" in line]
        assert len(warnings) == 1
        assert json.loads(warnings[0])["level"] == "warning"
