"""What every view of one butler's dashboard is built from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from butler.context import ButlerContext
from butler.dashboard.forms import PostRefused, check_post
from butler.dashboard.params import BadParam
from butler.dashboard.render import Page, e, page, refused
from butler.spawner.preflight import missing_credential


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

    async def page(self, view: Page, status: int = 200) -> HTMLResponse:
        """``view`` in the frame of this butler's pages, under the banner of what is wrong."""
        config = self.butler.config
        response = page(config.name, config.runtime.type, replace(view, banner=await self.banner()))
        response.status_code = status
        return response

    async def banner(self) -> str:
        """A line above every page when the runtime has no credential: every session would fail.

        Asked at each page (not each poll), so setting the credential clears it.
        """
        line = await missing_credential(self.butler.config, self.butler.spawner.credentials)
        return f'<p class="banner" role="alert" id="no-credential">{e(line)}</p>' if line else ""

    async def refused_page(self, line: str, status: int, current: str) -> HTMLResponse:
        """A page refused (a bad parameter, nothing there): its one line, in the page frame."""
        return await self.page(
            Page(
                title=f"{self.butler.config.name} · {status}",
                subtitle="not shown",
                source="",
                body=f'<p class="error" role="alert" id="refused">{e(line)}</p>'
                '<p><a href="/">Back to the sessions</a></p>',
                current=current,
                final=True,
            ),
            status,
        )

    async def posted(self, request: Request) -> Response | None:
        """None when this POST came from one of the dashboard's forms, else the refusal."""
        try:
            allowed = self.butler.config.butler.allowed_origins
            await check_post(request, self.owner_token, allowed)
        except PostRefused as exc:
            return refused(str(exc), 403)
        return None


def bad(exc: BadParam) -> Response:
    """The one-line JSON 400 for a bad query parameter of an ``/api`` twin."""
    return refused(str(exc), 400, json=True)
