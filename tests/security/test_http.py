"""Every route but /health wants the owner token; Host and Origin are checked before it."""

from __future__ import annotations

import hmac
import json

import httpx2
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from butler import __version__
from butler.security import owner_token as owner_module
from tests.helpers import TEST_TOKEN, butler_client

pytestmark = pytest.mark.slow  # a real server, and runtimes as processes

#: (method, path) of every kind of route a butler serves, and one it does not.
ROUTES = [
    ("GET", "/"),
    ("GET", "/?token=wrong-token"),
    ("GET", "/api/sessions"),
    ("GET", "/sessions/00000000-0000-0000-0000-000000000000"),
    ("GET", "/api/sessions/00000000-0000-0000-0000-000000000000"),
    ("GET", "/api/status"),
    ("GET", "/deliveries"),  # every butler's deliveries, this wave
    ("GET", "/api/deliveries"),
    ("GET", "/chat/api/conversations"),
    ("GET", "/assets/xterm/xterm.js"),  # the page's own two files are open (test_login)
    ("POST", "/mcp"),
    ("GET", "/sse"),
    ("POST", "/messages/?session_id=00000000000000000000000000000000"),
    ("GET", "/no-such-route"),
]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def send(url: str, method: str, path: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=url, timeout=10) as client:
        body = json.dumps(INITIALIZE) if method == "POST" else None
        return await client.request(method, path, headers={**MCP_HEADERS, **headers}, content=body)


@pytest.mark.parametrize("credential", ["none", "wrong", "owner-as-cookie-on-mcp"])
async def test_every_route_refuses_a_caller_without_the_token(butler, credential):
    headers = {
        "none": {},
        "wrong": bearer("x" * 43),
        "owner-as-cookie-on-mcp": {"Cookie": f"butler_token_{butler.config.butler.port}=x"},
    }[credential]
    for method, path in ROUTES:
        answer = await send(butler.url, method, path, headers)
        assert answer.status_code == 401, (method, path, answer.text)
        # One line, the same everywhere: nothing says what exists.
        assert list(answer.json()) == ["error"] and "\n" not in answer.text
        assert answer.json()["error"].startswith("unauthorized")


async def test_health_is_open_and_says_only_that_the_butler_is_up(butler):
    answer = await send(butler.url, "GET", "/health", {})
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "butler": "tester", "version": __version__}
    detail = await send(butler.url, "GET", "/api/status", bearer(TEST_TOKEN))
    assert detail.json()["database"] is True and "sessions_running" in detail.json()


@pytest.mark.parametrize("transport", ["mcp", "sse"])
async def test_the_owner_token_opens_both_transports(butler, transport):
    async with butler_client(f"{butler.url}/{transport}") as client:
        await client.call_tool("state_set", {"key": "k", "value": 1})
        assert (await client.call_tool("state_get", {"key": "k"})).structured_content
    with pytest.raises(Exception):  # noqa: B017 (the status itself is checked above)
        async with Client(f"{butler.url}/{transport}", auth="x" * 43) as client:
            await client.call_tool("state_set", {"key": "k", "value": 2})


async def test_a_session_token_opens_only_mcp_and_only_while_its_session_runs(butler):
    tokens = butler.butler.spawner.session_tokens
    token = tokens.issue("00000000-0000-0000-0000-00000000000a")
    assert (await send(butler.url, "POST", "/mcp", bearer(token))).status_code == 200
    assert (await send(butler.url, "GET", "/api/sessions", bearer(token))).status_code == 401
    assert (await send(butler.url, "GET", "/", bearer(token))).status_code == 401
    tokens.revoke("00000000-0000-0000-0000-00000000000a")
    for method, path in ROUTES:
        assert (await send(butler.url, method, path, bearer(token))).status_code == 401, path


async def test_the_login_link_sets_a_strict_cookie_and_leaves_a_clean_address(butler):
    async with httpx2.AsyncClient(base_url=butler.url, timeout=10) as browser:
        login = await browser.get(f"/?token={TEST_TOKEN}")
        assert login.status_code == 303 and login.headers["location"] == "/"
        cookie = login.headers["set-cookie"]
        assert f"butler_token_{butler.config.butler.port}=" in cookie
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        page = await browser.get("/")  # the cookie alone opens the dashboard now
        assert page.status_code == 200 and "sessions and builders" in page.text
        assert (await browser.get("/api/sessions")).status_code == 200
        # ...but never the MCP transports: a page cannot drive the butler with it.
        mcp = await browser.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert mcp.status_code == 401


@pytest.mark.parametrize("path", ["/mcp", "/sse", "/"])
async def test_a_foreign_host_is_misdirected_and_a_foreign_origin_forbidden(butler, path):
    method = "POST" if path == "/mcp" else "GET"
    owner = bearer(TEST_TOKEN)
    rebound = await send(butler.url, method, path, {**owner, "Host": "evil.example"})
    assert rebound.status_code == 421
    foreign = await send(butler.url, method, path, {**owner, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    # The dashboard's own origin is fine.
    if path == "/":
        own = await send(butler.url, "GET", "/", {**owner, "Origin": butler.url})
        assert own.status_code == 200


async def test_allowed_hosts_and_origins_let_a_reverse_proxy_in(serve):
    proxy = {"Host": "butler.example.com", "Origin": "https://butler.example.com"}
    keys = (
        'allowed_hosts = ["butler.example.com"]\nallowed_origins = ["https://butler.example.com"]\n'
    )
    async with serve(butler_keys=keys) as running:
        answer = await send(running.url, "GET", "/", {**bearer(TEST_TOKEN), **proxy})
        assert answer.status_code == 200
        other = await send(running.url, "GET", "/", {**bearer(TEST_TOKEN), "Host": "evil.example"})
        assert other.status_code == 421


def test_tokens_are_compared_in_constant_time(monkeypatch):
    seen: list[tuple[bytes, bytes]] = []
    compare = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return compare(a, b)

    monkeypatch.setattr(owner_module.hmac, "compare_digest", spy)
    assert owner_module.same_token(TEST_TOKEN, TEST_TOKEN) is True
    assert owner_module.same_token("y" * 43, TEST_TOKEN) is False
    assert seen == [(TEST_TOKEN.encode(), TEST_TOKEN.encode()), (b"y" * 43, TEST_TOKEN.encode())]


async def test_a_tool_error_is_not_an_auth_error(butler):
    async with butler_client(f"{butler.url}/mcp") as client:
        with pytest.raises(ToolError, match="must not be null"):
            await client.call_tool("state_set", {"key": "k", "value": None})
