"""Credential isolation: only declared variables, database first."""

from __future__ import annotations

import pytest

from butler.config import load_config
from butler.errors import ConfigError
from butler.spawner.environment import build_runtime_env
from butler.store.credentials import CredentialStore
from tests.helpers import write_butler

EXTRA = """
[butler.env]
required = ["HEALTH_TOKEN"]
optional = ["TZ_HINT", "NOT_SET_ANYWHERE"]

[butler.modules.calendar]
credentials = ["CALENDAR_KEY"]

[butler.modules.email]
enabled = false
credentials = ["EMAIL_PASSWORD"]
"""

HOST = {
    "PATH": "/usr/bin",
    "ANTHROPIC_API_KEY": "sk-ant",
    "OPENAI_API_KEY": "sk-oai",
    "HEALTH_TOKEN": "from-env",
    "TZ_HINT": "Europe/Paris",
    "CALENDAR_KEY": "cal",
    "EMAIL_PASSWORD": "hunter2",
    "AWS_SECRET_ACCESS_KEY": "canary",
    "HOME": "/root",
}


async def test_only_declared_variables_pass_and_db_wins(db, roster, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    config = load_config(write_butler(roster, "b", port=9, schema=db.schema, extra=EXTRA))
    store = CredentialStore(db, HOST)
    await store.set("HEALTH_TOKEN", "from-db")
    env = await build_runtime_env(config, store)
    assert env == {
        "PATH": "/usr/bin",
        "ANTHROPIC_API_KEY": "sk-ant",
        "OPENAI_API_KEY": "sk-oai",
        "HEALTH_TOKEN": "from-db",
        "TZ_HINT": "Europe/Paris",
        "CALENDAR_KEY": "cal",
    }


async def test_traceparent_only_when_given(db, roster):
    config = load_config(write_butler(roster, "b", port=9, schema=db.schema))
    store = CredentialStore(db, {})
    assert "TRACEPARENT" not in await build_runtime_env(config, store)
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert (await build_runtime_env(config, store, tp))["TRACEPARENT"] == tp


async def test_missing_required_variable_is_a_config_error(db, roster):
    config = load_config(write_butler(roster, "b", port=9, schema=db.schema, extra=EXTRA))
    with pytest.raises(ConfigError, match="required variable HEALTH_TOKEN has no value"):
        await build_runtime_env(config, CredentialStore(db, {}))
