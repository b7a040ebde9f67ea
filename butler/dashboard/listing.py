"""Routes of the session list and a session's page, and the owner's "run again"."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from butler.builders.records import is_builder, is_live
from butler.dashboard.deliveries import still_open
from butler.dashboard.detail import render_detail
from butler.dashboard.forms import button
from butler.dashboard.params import BadParam, session_query
from butler.dashboard.render import FINAL, SECURITY_HEADERS, Page, live, refused
from butler.dashboard.sessions import any_row, filter_form, matches, pager, render_list
from butler.dashboard.view import View
from butler.errors import ButlerError
from butler.spawner.spawner import TriggerRequest
from butler.store.session_ids import AmbiguousId
from butler.store.session_search import (
    COUNT_CAP,
    SessionQuery,
    count_matches,
    distinct_values,
    find_sessions,
)
from butler.store.sessions import parse_timestamp
from butler.webterm.panel import terminal_panel

#: A change stamped before a reader's cursor but committed after it still reaches it.
CURSOR_OVERLAP = timedelta(seconds=1)


class Listing:
    """``/``, ``/sessions/<id>``, their ``/api`` twins and ``POST .../run-again``."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.butler = self.view.butler

    async def found(self, params: dict[str, str]) -> tuple[str, int]:
        query, limit = session_query(params)
        rows = await find_sessions(self.butler.db, query, limit)
        found = ""
        if replace(query, before=None) != SessionQuery():  # a search or a filter
            found = matches(await count_matches(self.butler.db, query), COUNT_CAP)
        return found + render_list(rows) + pager(params, rows, limit), len(rows)

    async def index(self, request: Request) -> Response:
        params = dict(request.query_params)
        try:
            body, _ = await self.found(params)
        except BadParam as exc:
            return await self.view.refused_page(str(exc), 400, "/")
        columns = ("trigger_source", "runtime", "type")
        choices = {c: await distinct_values(self.butler.db, c) for c in columns}
        query = request.url.query
        return await self.view.page(
            Page(
                title=f"{self.butler.config.name} · butler",
                subtitle="sessions and builders",
                source="/api/sessions" + (f"?{query}" if query else ""),
                body=body,
                current="/",
                controls=filter_form(params, choices),
            )
        )

    async def index_json(self, request: Request) -> Response:
        params = dict(request.query_params)
        cursor = await self.butler.sessions.cursor()  # read first: no change slips between
        data: dict[str, Any] = {"final": False, "cursor": cursor.isoformat()}
        try:
            if "since" in params:
                since = parse_timestamp("since", params["since"])
                session_query(params)  # the rest must be valid too
                # Rows the page already shows are swapped in place; it asks for the
                # whole list only when one of these is new to it.
                changed = await self.butler.sessions.changed_since(since - CURSOR_OVERLAP, 200)
                data["rows"] = {r["id"]: any_row(r) for r in changed}
            else:
                data["html"], data["count"] = await self.found(params)
        except (BadParam, ValueError) as exc:
            return refused(str(exc), 400, json=True)
        return JSONResponse(data, headers=SECURITY_HEADERS)

    async def detail(self, session_id: str) -> tuple[dict[str, Any] | None, str]:
        row = await self.butler.sessions.get(session_id)
        if row is None:
            return None, ""
        deliveries = await self.butler.notifier.store.for_session(row["id"])
        # Final once nothing more can change: a message may still be retried after the end.
        row["final"] = row["status"] in FINAL and not still_open(deliveries)
        screen = await self.butler.builders.screen(row)
        actions = ""
        if not is_builder(row):
            again = f"/sessions/{row['id']}/run-again"
            actions = button(again, "Run again", self.view.owner_token, "run-again")
        elif is_live(row):  # as builder_stop does: the worktree and branch stay
            stop = f"/sessions/{row['id']}/stop"
            actions = button(stop, "Stop", self.view.owner_token, "stop")
        body = render_detail(
            row,
            screen,
            str(self.butler.config.config_dir),
            trace_url=self.view.trace_url,
            actions=actions,
            deliveries=deliveries,
        )
        return row, body

    async def session(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if len(session_id.replace("-", "")) < 32:
            # The start of an id (as the list and `butler sessions` show it) finds it too.
            try:
                whole = await self.butler.sessions.find(session_id)
            except AmbiguousId as exc:
                return await self.view.refused_page(str(exc), 404, "/")
            if whole is not None:
                return RedirectResponse(f"/sessions/{whole['id']}", 303)
        row, body = await self.detail(session_id)
        if row is None:
            line = f"session: {session_id[:40]!r} is not a session of this butler"
            return await self.view.refused_page(line, 404, "/")
        panel = terminal_panel(row)  # a live builder's terminal (butler.webterm)
        return await self.view.page(
            Page(
                title=f"session {row['id'][:8]}",
                subtitle=f"session {row['id']}",
                source=f"/api/sessions/{row['id']}",
                body=body + panel.html,
                final=row["final"],
                headers=panel.headers(SECURITY_HEADERS),
            )
        )

    async def session_json(self, request: Request) -> Response:
        row, body = await self.detail(request.path_params["session_id"])
        if row is None:
            return JSONResponse({"error": "no such session"}, 404, SECURITY_HEADERS)
        return live(body, row["final"], status=row["status"])

    async def run_again(self, request: Request) -> Response:
        refusal = await self.view.posted(request)
        if refusal is not None:
            return refusal
        row = await self.butler.sessions.get(request.path_params["session_id"])
        if row is None or is_builder(row):
            what = "a builder" if row else "not a session of this butler"
            asked = request.path_params["session_id"][:40]
            return refused(
                f"session: {asked!r} is {what}; expected a session a trigger started", 404
            )
        if row.get("parent_session_id") or row["trigger_source"] == "trigger":
            # A session's own trigger counts toward its caller's depth and
            # slots; rerun from here it would escape both.
            return refused(
                f"session: {row['id']} was triggered by another session; "
                "expected a top-level trigger to run again",
                409,
            )
        # The stored prompt already holds the context; the source keeps its limits.
        again = TriggerRequest(
            prompt=row["prompt"],
            trigger_source=row["trigger_source"],
            metadata={"run_again_of": row["id"]},
        )
        try:
            new_id, _ = await self.butler.spawner.start(again)
        except ButlerError as exc:
            return refused(f"run again: {exc}", 409)
        return RedirectResponse(f"/sessions/{new_id}", 303, headers=SECURITY_HEADERS)

    async def stop(self, request: Request) -> Response:
        """The builder page's Stop: end a running builder's runtime, recorded cancelled."""
        refusal = await self.view.posted(request)
        if refusal is not None:
            return refusal
        row = await self.butler.sessions.get(request.path_params["session_id"])
        if row is None or not is_builder(row):
            asked = request.path_params["session_id"][:40]
            return refused(f"session: {asked!r} is not a builder of this butler", 404)
        try:
            await self.butler.builders.stop_builder(row["metadata"]["builder_id"])
        except ButlerError as exc:
            return refused(f"stop: {exc}", 409)
        return RedirectResponse(f"/sessions/{row['id']}", 303, headers=SECURITY_HEADERS)

    def routes(self) -> list[Route]:
        return [
            Route("/", self.index, methods=["GET"]),
            Route("/api/sessions", self.index_json, methods=["GET"]),
            Route("/sessions/{session_id}", self.session, methods=["GET"]),
            Route("/api/sessions/{session_id}", self.session_json, methods=["GET"]),
            Route("/sessions/{session_id}/run-again", self.run_again, methods=["POST"]),
            Route("/sessions/{session_id}/stop", self.stop, methods=["POST"]),
        ]


def listing_routes(view: View) -> list[Route]:
    """The session list's and session pages' routes."""
    return Listing(view).routes()
