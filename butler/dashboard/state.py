"""The state store at ``/state``, read-only: keys by prefix, values pretty-printed and escaped."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from butler.dashboard.params import BadParam, only
from butler.dashboard.render import Page, e, live, table, when
from butler.dashboard.view import View, bad
from butler.store.state import MAX_KEY_CHARS

PAGE = 100
#: A value longer than this is shown cut (the whole is one ``state_get`` away).
SHOWN_CHARS = 20_000
_SEPARATOR = re.compile(r"(?<=[/:.])")


def key_text(params: Any, name: str) -> str:
    raw = params.get(name, "")
    if len(raw) > MAX_KEY_CHARS or "\x00" in raw:
        raise BadParam(
            f"{name}: {raw[:60]!r} is not allowed; "
            f"expected at most {MAX_KEY_CHARS} characters, no NUL"
        )
    return raw


def _key_links(key: str) -> str:
    """The key with each ``/``, ``:`` or ``.`` segment a link to the keys under it."""
    parts, so_far = [], ""
    for piece in _SEPARATOR.split(key):
        so_far += piece
        parts.append(f'<a href="/state?{e(urlencode({"prefix": so_far}))}">{e(piece)}</a>')
    return "".join(parts)


def pretty(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "\n… (cut)"


def render_state(prefix: str, entries: list[dict[str, Any]]) -> str:
    rows = [
        f'<tr data-key="{e(r["key"])}"><td><code>{_key_links(r["key"])}</code></td>'
        f'<td class="num">{r["version"]}</td><td>{e(when(r["updated_at"].isoformat()))}</td>'
        f'<td><pre class="value">{e(pretty(r["value"]))}</pre></td></tr>'
        for r in entries
    ]
    under = f" under <code>{e(prefix)}</code>" if prefix else ""
    if not rows:
        return f'<section id="state"><p class="empty">No keys{under}.</p></section>'
    more = ""
    if len(entries) == PAGE:
        after = urlencode({"prefix": prefix, "after": entries[-1]["key"]})
        link = f'<a id="next" href="/state?{e(after)}" rel="next">Next →</a>'
        more = f'<nav class="pager">{link}</nav>'
    head = ["Key", "Version", "Updated", "Value"]
    return f'<section id="state"><h2>Keys{under}</h2>{table(head, rows)}{more}</section>'


def _form(prefix: str) -> str:
    return (
        '<form id="prefix" class="filters" method="get" action="/state" role="search">'
        f'<label>Key prefix <input name="prefix" id="q" maxlength="{MAX_KEY_CHARS}"'
        f' value="{e(prefix)}"></label><button type="submit">Show</button>'
        ' <a href="/state">all</a></form>'
    )


def state_routes(view: View) -> list[Route]:
    """``/state?prefix=...&after=...`` and its live twin."""

    async def body(request: Request) -> tuple[str, str]:
        params = request.query_params
        only(params, ("prefix", "after"))
        prefix, after = key_text(params, "prefix"), key_text(params, "after")
        return prefix, render_state(prefix, await view.butler.state.page(prefix, after, PAGE))

    async def state(request: Request) -> Response:
        try:
            prefix, html = await body(request)
        except BadParam as exc:
            return await view.refused_page(str(exc), 400, "/state")
        query = request.url.query
        return await view.page(
            Page(
                title=f"{view.butler.config.name} · state",
                subtitle="state (read-only)",
                source="/api/state" + (f"?{query}" if query else ""),
                body=html,
                current="/state",
                controls=_form(prefix),
            )
        )

    async def state_json(request: Request) -> Response:
        try:
            _, html = await body(request)
        except BadParam as exc:
            return bad(exc)
        return live(html)

    return [
        Route("/state", state, methods=["GET"]),
        Route("/api/state", state_json, methods=["GET"]),
    ]
