"""A running builder's page has a Stop button, in a real Chromium."""

from __future__ import annotations

import pytest

from tests.dashboard.conftest import logged_in
from tests.helpers import get_json

pytestmark = pytest.mark.slow

LIVE_MS = 20_000


def test_a_running_builders_page_stops_it_with_one_button(dashboard, chromium):
    builders, _ = dashboard
    builder = builders.spawn("--shell")
    builders.wait_screen(builder, "agent> ")
    page = logged_in(chromium, builders.daemon.url)
    page.goto(f"{builders.daemon.url}/sessions/{builder['session_id']}")
    page.click('form.act button[value="stop"]')
    page.locator('span.status[data-status="cancelled"]').wait_for(timeout=LIVE_MS)
    url = f"{builders.daemon.url}/api/sessions/{builder['session_id']}"
    assert get_json(url)[1]["status"] == "cancelled"
    assert page.locator('button[value="stop"]').count() == 0  # nothing left to stop
    page.close()
