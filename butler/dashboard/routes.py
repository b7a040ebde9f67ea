"""Every route of one butler's dashboard, assembled from the view modules."""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from butler.context import ButlerContext
from butler.dashboard.charts import chart_routes
from butler.dashboard.chat import chat_routes
from butler.dashboard.conversations import conversation_routes
from butler.dashboard.deliveries import delivery_routes
from butler.dashboard.listing import listing_routes
from butler.dashboard.render import ASSETS, SECURITY_HEADERS, asset_text
from butler.dashboard.roster import roster_routes
from butler.dashboard.schedules import schedule_routes
from butler.dashboard.state import state_routes
from butler.dashboard.view import View


def dashboard_routes(butler: ButlerContext, owner_token: Callable[[], str]) -> list[Route]:
    """The dashboard's pages, their JSON twins, its two buttons and its two assets.

    ``owner_token`` says the token now: the forms' token follows a rotation.
    """
    view = View(butler, owner_token)
    return [
        *listing_routes(view),
        *chart_routes(view),
        *schedule_routes(view),
        *state_routes(view),
        *roster_routes(view),
        *conversation_routes(view),
        *delivery_routes(view),
        *chat_routes(view),
        Route("/assets/{name}", asset, methods=["GET"]),
    ]


async def asset(request: Request) -> Response:
    """One of the dashboard's own static files; nothing else is served from here."""
    name = request.path_params["name"]
    if name not in ASSETS:
        return Response("not found", 404)
    return Response(asset_text(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)
