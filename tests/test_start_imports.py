"""What a daemon's start imports: what serving needs, not a runtime's library."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import DaemonProcess, free_port, write_butler


def test_a_start_leaves_the_runtime_library_and_websockets_for_later(
    roster: Path, schema_name: str, pg_dsn: str
) -> None:
    # claude-agent-sdk is a fifth of a start, FastMCP's client stack another, and the
    # websocket stack serves only a builder's terminal: none is loaded before /health
    # answers (the first session loads the SDK, the first terminal the websockets).
    port = free_port()
    folder = write_butler(roster, "lean", port=port, schema=schema_name)
    env = {"PYTHONPROFILEIMPORTTIME": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    with DaemonProcess(folder, port=port, database_url=pg_dsn, env=env) as daemon:
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in daemon.logs().splitlines()
            if line.startswith("import time:")
        }
    assert "uvicorn" in imported and "fastmcp" in imported  # the log is what we think
    assert "claude_agent_sdk" not in imported
    # FastMCP is warmed through the server's own API, not an in-memory client.
    assert not any(name.startswith("fastmcp.client") for name in imported)
    assert not any(name.startswith("websockets") for name in imported)
    # Apprise is a fifth of a second: loaded by the first message sent, not by a start.
    assert "apprise" not in imported
    # Tools are described by their docstrings as written: FastMCP's docstring parser
    # (griffe, ~2 % of a start) is never asked.
    assert "griffe" not in imported
    # The dashboard's views are loaded by the first page asked for, not by a start.
    assert "butler.dashboard.routes" not in imported
    # No metric exporter configured: the API's no-op meter, not the metrics SDK.
    assert "opentelemetry.sdk.metrics" not in imported
    # PgQueuer (a fifth of a second) serves only a roster with workers: the first
    # session handed to one, or the first listing of them, loads it.
    assert "pgqueuer" not in imported
