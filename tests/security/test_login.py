"""Logging in from a browser, over HTTP: the login page on every page, the return to the
page asked for, a signed cookie that lasts, one-time tickets, and rotating the token."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from butler.config import load_config
from butler.security import login
from butler.security.http import RequireToken
from butler.security.owner_token import token_path
from butler.security.session_tokens import SessionTokens
from tests.conftest import TEST_DSN
from tests.helpers import REPO, TEST_TOKEN, DaemonProcess, free_port, write_butler

pytestmark = pytest.mark.slow  # a real server

PAGE = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def cookie_of(answer: httpx2.Response) -> str:
    return answer.headers["set-cookie"]


async def test_a_page_asked_for_without_login_answers_the_login_page_that_returns_to_it(butler):
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        answer = await browser.get("/charts?days=30", headers=PAGE)
        assert answer.status_code == 401
        assert answer.headers["content-type"].startswith("text/html")
        assert '<form method="post" action="/login"' in answer.text
        assert 'name="next" value="/charts?days=30"' in answer.text
        assert "butler token --config" in answer.text
        # An API path or a script keeps the one-line JSON 401.
        api = await browser.get("/api/sessions", headers=PAGE)
        assert api.status_code == 401 and list(api.json()) == ["error"]
        script = await browser.get("/charts")
        assert script.status_code == 401 and list(script.json()) == ["error"]


async def test_pasting_the_token_logs_in_for_30_days_and_returns_to_the_page(butler):
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        form = {"token": TEST_TOKEN, "next": "/schedules"}
        answer = await browser.post("/login", data=form, headers=PAGE)
        assert answer.status_code == 303 and answer.headers["location"] == "/schedules"
        cookie = cookie_of(answer)
        assert "Max-Age=2592000" in cookie and "HttpOnly" in cookie
        assert "samesite=strict" in cookie.lower() and "Secure" not in cookie  # plain http
        assert TEST_TOKEN not in cookie  # signed, never the token itself
        page = await browser.get("/schedules", headers=PAGE)
        assert page.status_code == 200 and 'action="/login"' not in page.text
        # The login page of someone logged in goes straight on.
        again = await browser.get("/login?next=/state", headers=PAGE)
        assert again.status_code == 303 and again.headers["location"] == "/state"


async def test_a_wrong_token_shows_the_login_page_again_with_the_reason(butler):
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        form = {"token": "x" * 43, "next": "/state"}
        answer = await browser.post("/login", data=form, headers=PAGE)
        assert answer.status_code == 401 and "set-cookie" not in answer.headers
        assert 'id="login-error"' in answer.text and "is not this butler" in answer.text
        assert 'name="next" value="/state"' in answer.text


@pytest.mark.parametrize(
    "asked",
    ["//evil.example/x", "https://evil.example/", "/\\evil.example", "evil", "/\t/evil.example"],
)
async def test_the_login_never_sends_the_browser_to_another_site(butler, asked):
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        answer = await browser.post("/login", data={"token": TEST_TOKEN, "next": asked})
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        page = await browser.get("/login", params={"next": asked}, headers=PAGE)
        assert page.status_code == 303 and page.headers["location"] == "/"


async def test_the_login_link_works_on_every_page_and_keeps_its_other_parameters(butler):
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        answer = await browser.get(f"/charts?days=7&token={TEST_TOKEN}", headers=PAGE)
        assert answer.status_code == 303 and answer.headers["location"] == "/charts?days=7"
        assert (await browser.get("/charts?days=7", headers=PAGE)).status_code == 200
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as stranger:
        wrong = await stranger.get("/charts?token=wrong-token-0123456789", headers=PAGE)
        assert wrong.status_code == 401 and "no longer" in wrong.text
        assert 'name="next" value="/charts"' in wrong.text  # the wrong token is not kept


async def test_a_roster_ticket_logs_in_once(butler):
    ticket = login.mint_ticket(TEST_TOKEN, "tester")
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        answer = await browser.get(f"/?ticket={ticket}", headers=PAGE)
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        assert "Max-Age=2592000" in cookie_of(answer)
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as replay:
        again = await replay.get(f"/?ticket={ticket}", headers=PAGE)
        assert again.status_code == 401 and "set-cookie" not in again.headers
        other = login.mint_ticket("another-butlers-token-0123456789abcdef", "tester")
        assert (await replay.get(f"/?ticket={other}", headers=PAGE)).status_code == 401


def test_a_roster_ticket_replayed_after_a_restart_is_refused(roster, schema_name):
    """Redeemed tickets were kept in memory only: a ticket seen once (a browser's
    history, a proxy's log) logged in again once the daemon had restarted."""
    port = free_port()
    folder = write_butler(roster, "tester", port=port, schema=schema_name)
    daemon = DaemonProcess(folder, port=port, database_url=TEST_DSN)
    ticket = login.mint_ticket(TEST_TOKEN, "tester")
    with daemon:
        first = httpx2.get(f"{daemon.url}/?ticket={ticket}", headers=PAGE, timeout=10)
        assert first.status_code == 303 and "Max-Age=2592000" in cookie_of(first)
    with daemon:  # the same butler, a new process
        replay = httpx2.get(f"{daemon.url}/?ticket={ticket}", headers=PAGE, timeout=10)
        assert replay.status_code == 401 and "set-cookie" not in replay.headers
        fresh = login.mint_ticket(TEST_TOKEN, "tester")
        assert httpx2.get(f"{daemon.url}/?ticket={fresh}", timeout=10).status_code == 303
    kept = login.tickets_path(load_config(folder)).read_text().split()
    assert len(kept) == 4 and all(nonce in ticket + fresh for nonce in kept[1::2])


def test_redeemed_tickets_are_kept_bounded_and_forgotten_at_their_expiry(tmp_path):
    now = [time.time()]
    store = tmp_path / "tickets"
    tickets = login.Tickets(store, clock=lambda: now[0])
    assert tickets.redeem(login.mint_ticket(TEST_TOKEN, "", now[0]), TEST_TOKEN)
    assert (store.stat().st_mode & 0o777) == 0o600 and len(store.read_text().splitlines()) == 1
    now[0] += login.TICKET_LIFETIME_S + 1
    assert tickets.redeem(login.mint_ticket(TEST_TOKEN, "", now[0]), TEST_TOKEN)
    assert len(store.read_text().splitlines()) == 1  # the expired one is gone from the file
    store.write_text("garbage\n" + store.read_text())  # a line that is none is skipped
    assert len(login.Tickets(store, clock=lambda: now[0])._redeemed) == 1


def test_a_ticket_whose_use_cannot_be_written_is_refused(tmp_path):
    (tmp_path / "data").write_text("a file where the data folder should be\n")
    tickets = login.Tickets(tmp_path / "data" / "tickets")
    ticket = login.mint_ticket(TEST_TOKEN, "tester")
    assert not tickets.redeem(ticket, TEST_TOKEN)
    assert not tickets.redeem(ticket, TEST_TOKEN)  # and it stays used


async def test_rotating_the_token_ends_every_login_at_once(serve, monkeypatch):
    monkeypatch.delenv("BUTLER_TOKEN")  # the token file is the token
    async with serve() as butler:
        old = token_path(butler.config).read_text().strip()
        async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
            await browser.get(f"/?token={old}")
            assert (await browser.get("/state", headers=PAGE)).status_code == 200
            rotate = [sys.executable, "-m", "butler.cli", "token", "--rotate"]
            rotated = subprocess.run(  # noqa: ASYNC221 - the command as a person runs it
                [*rotate, "--config", str(butler.config_dir)],
                capture_output=True,
                text=True,
                cwd=REPO,
                timeout=60,
            )
            assert rotated.returncode == 0, rotated.stderr
            new = rotated.stdout.strip()
            assert new != old and token_path(butler.config).read_text().strip() == new
            # The running daemon took it: the cookie and the old token are refused.
            assert (await browser.get("/state", headers=PAGE)).status_code == 401
            bearer = {"Authorization": f"Bearer {old}"}
            assert (await browser.get("/api/status", headers=bearer)).status_code == 401
            bearer = {"Authorization": f"Bearer {new}"}
            assert (await browser.get("/api/status", headers=bearer)).status_code == 200


def test_rotating_is_refused_in_one_line_when_butler_token_is_set(butler_dir):
    rotate = [sys.executable, "-m", "butler.cli", "token", "--rotate", "--config", str(butler_dir)]
    answer = subprocess.run(rotate, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert answer.returncode != 0
    assert "BUTLER_TOKEN is set" in answer.stderr and len(answer.stderr.strip().splitlines()) == 1


async def test_the_cookie_is_secure_behind_https():
    site = Starlette(routes=[Route("/", lambda _: PlainTextResponse("ok"))])
    guard = RequireToken(site, owner_token=lambda: TEST_TOKEN, sessions=SessionTokens(), cookie="c")
    transport = httpx2.ASGITransport(app=guard)
    async with httpx2.AsyncClient(transport=transport, base_url="https://butler.test") as client:
        answer = await client.get(f"/?token={TEST_TOKEN}")
        assert answer.status_code == 303 and "Secure" in cookie_of(answer)


def test_a_cookie_and_a_ticket_expire():
    now = time.time()
    cookie = login.issue_cookie(TEST_TOKEN, now)
    assert login.cookie_valid(cookie, TEST_TOKEN, now + login.COOKIE_LIFETIME_S - 5)
    assert not login.cookie_valid(cookie, TEST_TOKEN, now + login.COOKIE_LIFETIME_S + 5)
    assert not login.cookie_valid(cookie, "rotated-token-0123456789abcdefghijk", now)
    expires = login.mint_ticket(TEST_TOKEN, "", now).split(".")[0]
    assert int(expires) == int(now + login.TICKET_LIFETIME_S)
    later = login.Tickets(clock=lambda: now + login.TICKET_LIFETIME_S + 1)
    assert not later.redeem(login.mint_ticket(TEST_TOKEN, "", now), TEST_TOKEN)
