"""A banner on every page while the runtime has no credential: every session would fail."""

from __future__ import annotations

import httpx2
import pytest

from tests.conftest import TEST_DSN
from tests.helpers import TEST_TOKEN, InProcessButler, free_port, write_butler

pytestmark = pytest.mark.slow  # a real server

OWNER = {"Authorization": f"Bearer {TEST_TOKEN}"}


async def test_a_runtime_without_a_credential_shows_a_banner_until_one_is_set(
    roster, schema_name, monkeypatch
):
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    folder = write_butler(
        roster, "tester", port=free_port(), schema=schema_name, runtime={"type": "claude-code"}
    )
    async with (
        InProcessButler(folder, database_url=TEST_DSN) as running,
        httpx2.AsyncClient(base_url=running.url, headers=OWNER, timeout=10) as client,
    ):
        for path in ("/", "/charts", "/schedules"):
            page = (await client.get(path)).text
            assert 'id="no-credential"' in page, path
            assert "has no credential" in page and "ANTHROPIC_API_KEY" in page
        await running.butler.spawner.credentials.set("ANTHROPIC_API_KEY", "sk-test")
        assert 'id="no-credential"' not in (await client.get("/")).text
