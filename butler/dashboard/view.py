"""What every view of one butler's dashboard is built from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from butler.context import ButlerContext
from butler.dashboard.forms import Refused, check_post
from butler.dashboard.params import BadParam
from butler.dashboard.render import Page, page, refused


@dataclass(frozen=True)
class View:
    """One butler's dashboard: its context and the owner token its forms derive from."""

    butler: ButlerContext
    #: The owner token as it is now (read again after ``butler token --rotate``).
    current_token: Callable[[], str]

    @property
    def owner_token(self) -> str:
        return self.current_token()

    @property
    def trace_url(self) -> str | None:
        return self.butler.config.butler.telemetry.trace_url

    def page(self, view: Page) -> HTMLResponse:
        """``view`` in the frame of this butler's pages."""
        config = self.butler.config
        return page(config.name, config.runtime.type, view)

    async def posted(self, request: Request) -> Response | None:
        """None when this POST came from one of the dashboard's forms, else the refusal."""
        try:
            allowed = self.butler.config.butler.allowed_origins
            await check_post(request, self.owner_token, allowed)
        except Refused as exc:
            return refused(str(exc), 403)
        return None


def bad(exc: BadParam, json: bool) -> Response:
    """The one-line 400 for a bad query parameter."""
    return refused(str(exc), 400, json=json)
