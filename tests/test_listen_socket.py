"""The daemon's own listening socket: connections on it answer small writes at once."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from butler.config import load_config
from butler.roster import bind
from tests.helpers import free_port, write_butler


async def test_accepted_connections_do_not_hold_back_small_writes(tmp_path: Path) -> None:
    # With Nagle on, each small response write waits for the client's delayed ACK
    # (~40 ms per MCP tool call); asyncio turns it off only for IPPROTO_TCP listeners.
    config = load_config(write_butler(tmp_path, "nodelay", port=free_port()))
    sock = bind(config)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(connected, sock=sock)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", config.butler.port)
        assert await asyncio.wait_for(accepted, 10) == 1
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
