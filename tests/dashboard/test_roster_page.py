"""The roster page in a real Chromium: three butlers on one page, from ``butler up``
and from ``butler dashboard --roster`` for butlers started one by one."""

from __future__ import annotations

import contextlib
import sys
from datetime import UTC, datetime, timedelta

import pytest

from butler.paths import DataOwner
from butler.security.owner_token import token_path
from tests.dashboard.conftest import ARTIFACTS, launched, run_sql
from tests.dashboard.roster_pages import (
    NAMES,
    answering,
    configured_port,
    process,
    three,
)
from tests.helpers import (
    TEST_TOKEN,
    DaemonProcess,
    free_port,
    get_json,
    wait_until,
)

pytestmark = pytest.mark.slow
__all__ = ["three"]  # the fixture, imported to be used here

#: Today's sessions of each butler: (status, cost); and one of yesterday's, not counted.
TODAY = {
    "alpha": [("succeeded", 0.25), ("failed", 0.5), ("failed", 0.25)],
    "beta": [("succeeded", 1.0)],
    "gamma": [],
}
SEED = (
    "INSERT INTO sessions (id, prompt, status, trigger_source, runtime, cost_usd, created_at)"
    " SELECT gen_random_uuid(), 'p', s, 'external', 'command', c, now()"
    " FROM unnest($1::text[], $2::numeric[]) AS t(s, c)"
)
YESTERDAY = (
    "INSERT INTO sessions (id, prompt, status, trigger_source, runtime, cost_usd, created_at)"
    " VALUES (gen_random_uuid(), 'old', 'failed', 'external', 'command', 9,"
    " now() - interval '1 day')"
)
#: status, runtime, sessions, failures and spend today; sessions and spend over 7 days.
EXPECTED = {
    "alpha": ["up", "command", "3", "2", "$1.00", "4", "$10.00"],
    "beta": ["up", "command", "1", "0", "$1.00", "2", "$10.00"],
    "gamma": ["up", "command", "0", "0", "$0.00", "1", "$9.00"],
}


def seed(schemas: dict[str, str]) -> None:
    for name, rows in TODAY.items():
        statuses, costs = [s for s, _ in rows], [c for _, c in rows]
        run_sql(schemas[name], SEED, statuses, costs)
        run_sql(schemas[name], YESTERDAY)


def roster_rows(page) -> dict[str, list[str]]:
    rows = page.locator("#roster tr[data-butler]")
    rows.first.wait_for(timeout=20_000)
    found = {}
    for i in range(rows.count()):
        cells = rows.nth(i).locator("th, td").all_inner_texts()
        found[cells[0]] = cells[1:]
    return found


def check_charts(page) -> None:
    """The roster's per-butler cost chart: today's and yesterday's spend of each butler."""
    found = page.locator("#cost-by-butler rect[data-day]").evaluate_all(
        "nodes => nodes.map(n => [n.dataset.key, n.dataset.day, Number(n.dataset.value)])"
    )
    today = datetime.now(UTC).date()
    yesterday = str(today - timedelta(days=1))
    assert {(k, d): v for k, d, v in found} == {
        ("alpha", str(today)): 1.0, ("beta", str(today)): 1.0,
        ("alpha", yesterday): 9.0, ("beta", yesterday): 9.0, ("gamma", yesterday): 9.0,
    }  # fmt: skip


def check_page(page) -> None:
    rows = roster_rows(page)
    assert list(rows) == list(NAMES)
    for name, expected in EXPECTED.items():
        status, runtime, _sandbox, *figures, _next, channels = rows[name]
        assert channels == "—"  # no chat channels in this roster
        assert [status, runtime, *figures] == expected, name
    assert rows["alpha"][8].startswith("digest: ") and "07:30 Europe/Paris" in rows["alpha"][8]
    assert rows["beta"][8] == "—"
    total = page.locator("#roster tr.total td").all_inner_texts()
    assert total[3:8] == ["4", "2", "$2.00", "7", "$29.00"]


def test_butler_up_serves_one_roster_page_for_three_butlers(roster, three, tmp_path):
    from tests.conftest import TEST_DSN

    argv = [sys.executable, "-m", "butler.cli", "up", "--roster", str(roster),
            "--database-url", TEST_DSN]  # fmt: skip
    log = tmp_path / "up.log"
    with process(argv, log) as proc:
        port = configured_port(roster / "alpha")
        answering(f"http://127.0.0.1:{port}", proc, log)
        seed(three)
        with launched() as browser:
            page = browser.new_page(viewport={"width": 1300, "height": 600})
            page.goto(f"http://127.0.0.1:{port}/?token={TEST_TOKEN}")
            page.goto(f"http://127.0.0.1:{port}/roster")
            check_page(page)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dashboard-roster.png"), full_page=True)
            # Live: a session of beta failing now shows without a reload.
            run_sql(three["beta"], SEED, ["failed"], [0.5])
            cell = page.locator('#roster tr[data-butler="beta"] td').nth(4)
            wait_until(lambda: cell.inner_text() == "1", timeout=20)
            page.set_viewport_size({"width": 390, "height": 844})
            page.screenshot(path=str(ARTIFACTS / "dashboard-roster-phone.png"), full_page=True)
            page.close()


def test_butler_dashboard_roster_for_butlers_started_separately(roster, three, tmp_path):
    from tests.conftest import TEST_DSN

    with contextlib.ExitStack() as stack:
        for name in NAMES:
            # Started on another port than butler.toml says: the roster page finds it
            # where the butler noted it, in its data folder.
            daemon = DaemonProcess(roster / name, port=free_port(), database_url=TEST_DSN)
            stack.enter_context(daemon)
            # The roster reads each butler's token file, never its own BUTLER_TOKEN;
            # these daemons take theirs from BUTLER_TOKEN, so keep it where a file would be.
            token_path(DataOwner(name, roster / name)).write_text(TEST_TOKEN + "\n")
            token_path(DataOwner(name, roster / name)).chmod(0o600)
        seed(three)
        port = free_port()
        argv = [sys.executable, "-m", "butler.cli", "dashboard", "--roster", str(roster),
                "--port", str(port)]  # fmt: skip
        log = tmp_path / "dashboard.log"
        proc = stack.enter_context(process(argv, log))
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: proc.poll() is not None or _serving(url), timeout=60)
        assert proc.poll() is None, log.read_text()
        assert get_json(f"{url}/api/roster", token=None)[0] == 401
        with launched() as browser:
            page = browser.new_page(viewport={"width": 1300, "height": 600})
            page.goto(f"{url}/?token={TEST_TOKEN}")
            check_page(page)
            check_charts(page)  # each butler's per-day figures reach the standalone roster
            href = page.get_attribute('#roster tr[data-butler="beta"] a', "href")
            assert href != f"http://127.0.0.1:{configured_port(roster / 'beta')}/"
            page.screenshot(path=str(ARTIFACTS / "dashboard-roster-standalone.png"), full_page=True)
            page.close()


def _serving(url: str) -> bool:
    try:
        return get_json(f"{url}/api/roster", token=None)[0] == 401
    except OSError:
        return False
