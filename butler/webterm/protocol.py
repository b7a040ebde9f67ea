"""uvicorn's WebSocket protocol, imported at the first handshake rather than at start.

Importing the websockets stack took about 70 ms here (``python -X importtime``
on ``uvicorn.protocols.websockets.websockets_sansio_impl``) and only a
builder's terminal uses it, so a daemon answers ``/health`` without it.
uvicorn takes any callable as its protocol class and calls it once per
upgraded connection.
"""

from __future__ import annotations

from typing import Any


def websocket_protocol(**options: Any) -> Any:
    """A websockets (sans-I/O) protocol for one upgraded connection."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    return WebSocketsSansIOProtocol(**options)
