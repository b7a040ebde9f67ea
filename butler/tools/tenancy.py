"""What a session a chat's sender started may reach: its own conversation, nothing else.

The scope follows the session by its token: the token guard resolves the
token to a session id, and that session's rows name the person its chain
serves (:mod:`butler.store.tenants`). This middleware finds that tenant once
per tool call (cached per session: a session's chain never changes) and
holds it for the tools, which narrow what they read and write to it:
``session_list``, ``session_get``, ``session_status`` and ``session_resume``
see the tenant's sessions only (another's is "not found", as a session that
does not exist); ``state_*`` read and write the tenant's own share of the
butler's state; a ``dedupe_key`` is the tenant's own. A sender's session may
call only :data:`TENANT_TOOLS`: builders act on the owner's repositories and
schedules run as the owner, so they stay the owner's, and a tool added
later is the owner's until it is listed here.

``[butler.channels] sender_scope`` widens it on purpose: ``"sender"`` (all
of that person's conversations) or ``"butler"`` (everything, as the owner's
own sessions).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from butler.context import ButlerContext
from butler.security.caller import current_caller
from butler.store.state import StateStore
from butler.store.tenants import Tenant, in_scope, tenant_of

#: The tools a session started by a chat message may see and call.
TENANT_TOOLS = frozenset(
    {
        "state_get",
        "state_set",
        "state_list",
        "state_delete",
        "status",
        "trigger",
        "session_get",
        "session_list",
        "session_start",
        "session_status",
        "session_resume",
        "notify",
        "send_file",
    }
)
#: Sessions whose tenant is kept, at most (the oldest forgotten first).
CACHED = 4096

#: The tenant of the tool call in progress: unset outside a call the middleware saw.
_TENANT: ContextVar[Tenant | str | None] = ContextVar("butler_tenant", default="unset")


def current_tenant() -> Tenant | None:
    """The tenant of the current tool call (None: the owner, or an owner's session).

    A session's call the middleware did not see is refused rather than taken for the
    owner's.
    """
    tenant = _TENANT.get()
    if isinstance(tenant, str):
        if current_caller().is_session:
            raise ToolError("this call's scope is unknown; refused")
        return None
    return tenant


async def visible(butler: ButlerContext, session_id: str) -> bool:
    """Whether the current caller may see the session ``session_id``."""
    tenant = current_tenant()
    return tenant is None or await in_scope(butler.db, tenant, session_id)


class TenancyMiddleware(Middleware):
    """Finds the tenant of each session's tool call; holds a tenant to its tools."""

    def __init__(self, butler: ButlerContext) -> None:
        self.butler = butler
        self._known: OrderedDict[str, Tenant | None] = OrderedDict()

    async def tenant(self) -> Tenant | None:
        session_id = current_caller().session_id
        if session_id is None:
            return None
        if session_id in self._known:
            self._known.move_to_end(session_id)
            return self._known[session_id]
        scope = self.butler.config.butler.channels.sender_scope
        found = await tenant_of(self.butler.db, session_id, scope)
        self._known[session_id] = found
        while len(self._known) > CACHED:
            self._known.popitem(last=False)
        return found

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        listed: Sequence[Any] = await call_next(context)
        if await self.tenant() is None:
            return listed
        return [tool for tool in listed if tool.name in TENANT_TOOLS]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        tenant = await self.tenant()
        name = context.message.name
        if tenant is not None and name not in TENANT_TOOLS:
            raise ToolError(
                f"tool {name!r} is not for a session a chat message started (it acts as the "
                f"owner's); [butler.channels] sender_scope = 'butler' in "
                f"{self.butler.config.config_dir / 'butler.toml'} would allow it"
            )
        token = _TENANT.set(tenant)
        try:
            return await call_next(context)
        finally:
            _TENANT.reset(token)


class TenantState:
    """A tenant's share of the butler's state: its keys live under its prefix, which it
    never sees; the rest of the state is out of its reach."""

    def __init__(self, store: StateStore, prefix: str) -> None:
        self.store = store
        self.prefix = prefix

    async def get(self, key: str) -> Any | None:
        return await self.store.get(self.prefix + key)

    async def get_versioned(self, key: str) -> tuple[Any | None, int]:
        return await self.store.get_versioned(self.prefix + key)

    async def set(self, key: str, value: Any, if_version: int | None = None) -> int:
        return await self.store.set(self.prefix + key, value, if_version)

    async def list(self, prefix: str = "") -> dict[str, Any]:
        found = await self.store.list(self.prefix + prefix)
        return {key.removeprefix(self.prefix): value for key, value in found.items()}

    async def delete(self, key: str) -> bool:
        return await self.store.delete(self.prefix + key)


def state_of(butler: ButlerContext) -> StateStore | TenantState:
    """The state the current caller reads and writes: the butler's, or its tenant's share."""
    tenant = current_tenant()
    return butler.state if tenant is None else TenantState(butler.state, tenant.state_prefix)
