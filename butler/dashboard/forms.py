"""The dashboard's buttons that act (run again, run now): POSTs that a web page cannot forge.

Three locks, each enough on its own against a page on another site: the owner
cookie is ``SameSite=Strict`` (not sent on a cross-site POST); the POST must
carry an ``Origin`` header naming this dashboard (browsers send one on every
POST, so a missing one is refused too); and the form must carry the
dashboard's form token, derived from the owner token and shown only on the
owner's own pages.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from urllib.parse import parse_qs

from starlette.requests import Request

from butler.dashboard.render import e

#: The largest form body read; the dashboard's forms carry one token.
MAX_FORM_BYTES = 4096


class PostRefused(Exception):
    """A POST that is refused; its message is the one line to answer with (403)."""


def form_token(owner_token: str) -> str:
    """The token every dashboard form carries (not the owner token itself)."""
    return hmac.new(owner_token.encode(), b"butler-dashboard-form", hashlib.sha256).hexdigest()


def hidden_token(owner_token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{e(form_token(owner_token))}">'


def button(action: str, label: str, owner_token: str, name: str) -> str:
    """A one-button form that POSTs to ``action``."""
    return (
        f'<form method="post" action="{e(action)}" class="act">{hidden_token(owner_token)}'
        f'<button type="submit" name="do" value="{e(name)}">{e(label)}</button></form>'
    )


async def check_post(
    request: Request, owner_token: str, allowed_origins: Sequence[str] = ()
) -> None:
    """Raise :class:`PostRefused` unless this POST comes from one of this dashboard's forms.

    ``allowed_origins`` (``[butler] allowed_origins``) are the dashboard's too,
    e.g. its address behind a TLS proxy.
    """
    check_origin(request, allowed_origins)
    size = request.headers.get("content-length", "")
    if not size.isdigit() or int(size) > MAX_FORM_BYTES:
        raise PostRefused(
            f"body: {size or 'no'} bytes; expected a form of at most {MAX_FORM_BYTES}"
        )
    fields = parse_qs((await request.body())[:MAX_FORM_BYTES].decode("utf-8", "replace"))
    presented = (fields.get("csrf") or [""])[0]
    if not hmac.compare_digest(presented.encode(), form_token(owner_token).encode()):
        raise PostRefused(
            "csrf: missing or wrong form token; expected the token of a dashboard form"
        )


def check_origin(request: Request, allowed_origins: Sequence[str] = ()) -> None:
    """Raise :class:`PostRefused` unless the request's ``Origin`` is this dashboard (a browser
    sends one with every POST and every script's request that changes something)."""
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    origin = request.headers.get("origin")
    if origin != own and origin not in allowed_origins:
        shown = "none" if origin is None else repr(origin[:100])
        raise PostRefused(
            f"origin: {shown} is not this dashboard; expected {own} "
            "(the dashboard's buttons post only from its own pages)"
        )
