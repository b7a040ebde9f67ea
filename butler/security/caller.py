"""Who is calling a tool: the owner, or one running session of this butler."""

from __future__ import annotations

from dataclasses import dataclass

from fastmcp.server.dependencies import get_http_request

#: Where the HTTP guard leaves the caller in the ASGI scope, for the tools to find.
SCOPE_KEY = "butler.caller"


@dataclass(frozen=True)
class Caller:
    """The owner (``session_id`` None) or the session a presented token was issued to."""

    session_id: str | None = None

    @property
    def is_session(self) -> bool:
        return self.session_id is not None


OWNER = Caller()


def current_caller() -> Caller:
    """The caller of the current tool call, as the server authenticated it.

    A call that did not arrive over HTTP comes from code in this process (an
    in-memory client): the owner's own.
    """
    try:
        request = get_http_request()
    except RuntimeError:
        return OWNER
    caller = request.scope.get(SCOPE_KEY)
    return caller if isinstance(caller, Caller) else OWNER


def request_origin(caller: Caller) -> dict[str, str]:
    """How a session asked for by ``caller`` is recorded: by a session, source ``trigger``."""
    if caller.session_id is None:
        return {}
    return {"trigger_source": "trigger", "caller_session_id": caller.session_id}
