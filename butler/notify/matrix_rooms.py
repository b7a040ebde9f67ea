"""Before Apprise sends to Matrix: each room exists and the bot is in it.

Apprise's Matrix service joins a room it is given by alias and, when the
alias names no room, creates one: a private room with only the bot in it, so
the message is "delivered" where nobody reads it. The daemon asks the
homeserver first, as the URL's account, through the client-server API: an
alias that names no room, or a room the bot has not joined, is a refusal in
one line naming the fix, and Apprise never sees that URL. Webhook modes
(``?mode=``) name no room and are left to Apprise.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

#: Longest the check may take, all its requests together.
CHECK_TIMEOUT_S = 20.0


class RoomProblem(Exception):
    """A room of the URL that Apprise must not be handed (its text is the line to show)."""


def is_matrix(service: Any) -> bool:
    """Whether ``service`` (an Apprise service) posts into Matrix rooms as a user."""
    return getattr(service, "schema", None) in ("matrix", "matrixs") and (
        getattr(service, "mode", "off") == "off"
    )


async def check_rooms(service: Any) -> None:
    """Raise :class:`RoomProblem` unless every room of ``service`` exists with the bot in it."""
    scheme = "https" if service.secure else "http"
    port = f":{service.port}" if service.port else ""
    base = f"{scheme}://{service.host}{port}/_matrix/client/v3"
    async with httpx.AsyncClient(base_url=base, timeout=CHECK_TIMEOUT_S) as client:
        token, logged_in = await _token(client, service)
        headers = {"Authorization": f"Bearer {token}"}
        try:
            await _check(client, headers, list(service.rooms or []))
        finally:
            if logged_in:  # the check's own login goes: Apprise logs in for itself
                await client.post("/logout", headers=headers)


async def _token(client: httpx.AsyncClient, service: Any) -> tuple[str, bool]:
    """The access token to ask with, and whether it is a login of the check's own."""
    if service.user and service.password:
        body = {
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": service.user},
            "password": service.password,
        }
        answer = await client.post("/login", json=body)
        if answer.status_code != 200:
            raise RoomProblem(f"Matrix refused the login of {service.user}: {_error(answer)}")
        return str(answer.json()["access_token"]), True
    if service.password or service.user:  # matrix://TOKEN@host: the token alone
        return str(service.password or service.user), False
    raise RoomProblem("the Matrix URL names no user and no token")


async def _check(client: httpx.AsyncClient, headers: dict[str, str], rooms: list[str]) -> None:
    who = await client.get("/account/whoami", headers=headers)
    if who.status_code != 200:
        raise RoomProblem(f"Matrix refused the access token: {_error(who)}")
    user = str(who.json()["user_id"])
    server = user.split(":", 1)[1]
    joined = await client.get("/joined_rooms", headers=headers)
    if joined.status_code != 200:
        raise RoomProblem(f"Matrix did not list the rooms of {user}: {_error(joined)}")
    inside = set(joined.json().get("joined_rooms") or [])
    for room in rooms:
        named = room if ":" in room else f"{room}:{server}"
        room_id = named
        if named.startswith("#"):
            found = await client.get(f"/directory/room/{quote(named, safe='')}", headers=headers)
            if found.status_code == 404:
                raise RoomProblem(
                    f"Matrix room {named} does not exist: create it, invite {user} and "
                    "accept the invite as that user (the butler never creates a room)"
                )
            if found.status_code != 200:
                raise RoomProblem(f"Matrix could not find room {named}: {_error(found)}")
            room_id = str(found.json()["room_id"])
        if room_id not in inside:
            raise RoomProblem(
                f"{user} is not in Matrix room {named}: invite it, and accept the invite "
                "as that user (log in once as it in a Matrix client)"
            )


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` is the homeserver not answering (rather than a bug)."""
    return isinstance(exc, httpx.HTTPError)


def _error(answer: httpx.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return f"HTTP {answer.status_code}"
    return f"{body.get('errcode', answer.status_code)} {body.get('error', '')}".strip()
