"""``butler dashboard --roster DIR``: one roster page for butlers started separately.

It reads each butler's address from its data folder (``serving.json``, written
when it starts serving; its ``butler.toml`` otherwise) and its owner token
from the same place (its token file only: never created here, and never this
process's own ``BUTLER_TOKEN``; a butler without one shows as "no token"),
asks each ``/api/summary`` (only on a port this user alone listens on: the
token never goes to another user's listener), and serves the page on its own
port behind its own owner token (``BUTLER_TOKEN`` overrides, as for a butler).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastmcp.server.http import HostOriginGuardMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from butler.config import ButlerConfig
from butler.dashboard.charts import day_range, ranges
from butler.dashboard.login import login_page
from butler.dashboard.params import BadParam, chart_days
from butler.dashboard.render import ASSETS, SECURITY_HEADERS, Page, asset_text, live, page, refused
from butler.dashboard.roster import render_roster
from butler.errors import UserError
from butler.jsonfile import read_json_object
from butler.paths import DataOwner, serving_file
from butler.security.http import RequireToken, cookie_name
from butler.security.listener import held_by_me
from butler.security.login import mint_ticket
from butler.security.owner_token import LiveToken, stored_owner_token
from butler.security.session_tokens import SessionTokens

#: The name its own token is kept under (not a butler name: those start with a letter).
TOKEN_NAME = "_roster-dashboard"


def dashboard_owner(roster: Path) -> DataOwner:
    """Whose data folder keeps the roster dashboard's own token: this roster's."""
    return DataOwner(TOKEN_NAME, roster)


TIMEOUT_S = 2.0


def address(config: ButlerConfig) -> str:
    """Where ``config``'s butler serves, as it noted when it started, else its config."""
    try:
        noted = read_json_object(serving_file(config), "a serving address", UserError)
    except UserError:
        noted = {}
    host, port = noted.get("host", config.butler.host), noted.get("port", config.butler.port)
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{host}:{int(port)}"


def ask(config: ButlerConfig, days: int = 7) -> dict[str, Any]:
    """One butler's summary with ``days`` of per-day figures, or a row saying why not."""
    url = address(config)
    row: dict[str, Any] = {"name": config.name, "url": url, "runtime": config.runtime.type}
    mine = held_by_me(urllib.parse.urlsplit(url).port or 80)
    if not mine:  # the token goes only to the owner's own process, never to a squatter
        return {**row, "status": "down" if mine is None else "not ours"}
    try:
        token = stored_owner_token(config)
        if token is None:  # never made here: a file created now would match no daemon
            return {**row, "status": "no token"}
        request = urllib.request.Request(
            f"{url}/api/summary?days={int(days)}", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            found = json.loads(response.read(1_000_000))
    except urllib.error.HTTPError as exc:
        return {**row, "status": "refused" if exc.code == 401 else f"error {exc.code}"}
    except (OSError, ValueError, UserError):
        return {**row, "status": "down"}
    if not isinstance(found, dict) or found.get("name") != config.name:
        return {**row, "status": "other"}  # another program holds its port
    # The link logs the browser in to that butler too: one login for the roster.
    return {**found, "url": url, "login": f"{url}/?ticket={mint_ticket(token, config.name)}"}


async def summaries(configs: Sequence[ButlerConfig], days: int) -> list[dict[str, Any]]:
    """Every butler's summary, asked at once."""
    return list(await asyncio.gather(*(asyncio.to_thread(ask, c, days) for c in configs)))


async def _body(configs: Sequence[ButlerConfig], days: int) -> str:
    return render_roster(await summaries(configs, days), day_range(days))


def build_roster_app(configs: Sequence[ButlerConfig], port: int) -> ASGIApp:
    """The roster page, its live twin and the assets, behind the token and Host/Origin guards."""

    async def roster(request: Request) -> Response:
        try:
            days = chart_days(request.query_params, ("days",), default=7)
        except BadParam as exc:
            return refused(str(exc))
        return page(
            "roster",
            "",
            Page(
                title="roster · butler",
                subtitle="every butler of the roster",
                source=f"/api/roster?days={days}",
                body=await _body(configs, days),
                current="/roster",
                controls=ranges(days, "/"),
                views=(("/", "Roster"),),
                meta=f"{len(configs)} butlers",
            ),
        )

    async def roster_json(request: Request) -> Response:
        try:  # the page's script may send its cursor
            days = chart_days(request.query_params, ("days", "since"), default=7)
        except BadParam as exc:
            return refused(str(exc), json=True)
        return live(await _body(configs, days))

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("not found", 404)
        return Response(asset_text(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)

    site = Starlette(
        routes=[
            Route("/", roster, methods=["GET"]),
            Route("/api/roster", roster_json, methods=["GET"]),
            Route("/assets/{name}", asset, methods=["GET"]),
        ]
    )
    sessions = SessionTokens()  # no session of a runtime ever calls this page
    guarded = RequireToken(
        site,
        owner_token=LiveToken(dashboard_owner(configs[0].roster_dir)),
        sessions=sessions,
        cookie=cookie_name(port),
        login_page=login_page("roster", "butler dashboard --roster DIR"),
    )
    return HostOriginGuardMiddleware(guarded, allowed_hosts=[], allowed_origins=[], mode="strict")
