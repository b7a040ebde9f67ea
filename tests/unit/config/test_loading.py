"""A butler's folder as load_config reads it: defaults, overrides, every table."""

from __future__ import annotations

import pytest

from butler.config import load_config
from tests.helpers import CONFIG_OVERRIDES, butler_toml, write_butler


def test_a_codex_butler_with_only_agents_md_loads(roster):
    folder = butler_toml(roster, '[butler]\nname = "tester"\n[butler.runtime]\ntype = "codex"\n')
    (folder / "CLAUDE.md").rename(folder / "AGENTS.md")
    assert load_config(folder).runtime.type == "codex"


def test_environment_wins_over_the_file_and_options_over_the_environment(roster, monkeypatch):
    folder = butler_toml(
        roster,
        '[butler]\nname = "tester"\nport = 8100\n\n'
        '[butler.db]\nurl = "postgresql://file@127.0.0.1/file"\n',
    )
    assert load_config(folder).butler.port == 8100
    monkeypatch.setenv("BUTLER_PORT", "8201")
    monkeypatch.setenv("DATABASE_URL", "postgresql://env@127.0.0.1/env")
    config = load_config(folder)
    assert config.butler.port == 8201
    assert config.butler.db.url == "postgresql://env@127.0.0.1/env"
    config = load_config(folder, port=8302, db_url="postgresql://cli@127.0.0.1/cli")
    assert config.butler.port == 8302
    assert config.butler.db.url == "postgresql://cli@127.0.0.1/cli"


def test_a_minimal_folder_gets_the_documented_defaults(roster, monkeypatch):
    for name in CONFIG_OVERRIDES:
        monkeypatch.delenv(name, raising=False)
    folder = butler_toml(roster, '[butler]\nname = "my-butler"\n', name="my-butler")
    config = load_config(folder)
    assert config.butler.host == "127.0.0.1"
    assert config.runtime.type == "claude-code"
    assert config.runtime.max_concurrent_sessions == 1
    assert config.runtime.max_queued_sessions == 100
    assert config.runtime.max_turns == 20
    assert config.butler.db.url is None  # the embedded database
    assert config.db_schema == "my_butler"  # its own schema, named after it


def test_a_full_butler_toml_loads(roster):
    folder = butler_toml(
        roster,
        """
[butler]
name = "health"
port = 8201
description = "Tracks medications."

[butler.runtime]
type = "claude-code"
model = "claude-sonnet-4-5"
max_concurrent_sessions = 2
timeout_s = 300

[butler.env]
required = ["ANTHROPIC_API_KEY"]

[butler.db]
schema = "health_v2"

[[butler.schedule]]
name = "morning-check"
cron = "0 8 * * *"
prompt = "Check today's medications."
timezone = "Europe/Paris"
""",
    )
    config = load_config(folder)
    assert config.runtime.max_concurrent_sessions == 2
    assert config.runtime.timeout_s == 300.0
    assert config.db_schema == "health_v2"
    [schedule] = config.butler.schedule
    assert (schedule.name, schedule.cron, schedule.timezone) == (
        "morning-check",
        "0 8 * * *",
        "Europe/Paris",
    )


def test_a_builder_runtime_table_is_checked_like_the_runtime(roster):
    extra = '\n[butler.builders.runtimes.codex]\nmodel = "m"\nargs = ["-c", "x=1"]\n'
    folder = write_butler(roster, "b", port=1, extra=extra)
    table = load_config(folder).butler.builders.runtimes["codex"]
    assert (table.model, table.args) == ("m", ["-c", "x=1"])
    write_butler(roster, "b", port=1, extra='\n[butler.builders.runtimes.nope]\nmodel = "m"\n')
    with pytest.raises(Exception, match=r"butler.builders.runtimes.nope.type: unknown runtime"):
        load_config(folder)
