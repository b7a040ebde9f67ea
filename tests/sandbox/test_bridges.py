"""The jail's bridge (``bridge_*.c``, built when butler is installed), in a real jail.

Cases: the proxy port reaches an allowed host and is refused another, a forwarded
loopback port reaches the host's, the runtime's exit status and its death by a
signal come out as bubblewrap reports them, a program that cannot start is named,
and ``linger`` reports the runtime's end and waits for what it left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from butler.sandbox.egress import Target
from tests.sandbox.jailed import jailed

pytestmark = pytest.mark.slow  # real jails

#: Run by the jail's Python: a request through the proxy port, then one to the forward.
CLIENT = r"""
import json, socket, sys
proxy, allowed, refused = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def through_proxy(target):
    s = socket.create_connection(("127.0.0.1", proxy), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk: break
        head += chunk
    status = head.split(b" ")[1].decode() if head else "none"
    if status == "200":
        s.sendall(b"ping\n")
        return status, s.makefile("rb").readline().decode().strip()
    return status, ""
def forward():
    s = socket.create_connection(("127.0.0.1", allowed), timeout=10)
    s.sendall(b"ping\n")
    return s.makefile("rb").readline().decode().strip()
print(json.dumps({"allowed": through_proxy(f"127.0.0.1:{allowed}"),
                  "refused": through_proxy(refused), "forward": forward()}))
"""


@contextlib.asynccontextmanager
async def echo_server() -> AsyncIterator[int]:
    """A host loopback server answering each line with ``pong <line>``; its port."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        writer.write(b"pong " + line)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def test_the_proxy_port_and_a_forward_reach_an_allowed_host_only(bridge: str, tmp_path: Path):
    async with echo_server() as port:
        allowed = frozenset({Target("127.0.0.1", port)})
        proxy = 3128  # the jail's first proxy port not among its forwards
        argv = ["/usr/bin/python3", "-I", "-c", CLIENT, str(proxy), str(port), "example.org:443"]
        status, out, err, used = await jailed(tmp_path, argv, allowed)
    assert used == proxy
    assert status == 0, err
    report = json.loads(out)
    assert report["allowed"] == ["200", "pong ping"]
    assert report["refused"] == ["403", ""]
    assert report["forward"] == "pong ping"


@pytest.mark.parametrize(
    ("script", "expected"),
    [("exit 3", 3), ("kill -TERM $$", 128 + 15), ("kill -KILL $$", 128 + 9)],
)
async def test_the_runtimes_end_comes_out_as_bubblewrap_reports_it(
    bridge: str, tmp_path: Path, script: str, expected: int
):
    status, _, _, _ = await jailed(tmp_path, ["/bin/sh", "-c", script])
    assert status == expected


async def test_a_program_that_cannot_start_is_named(bridge: str, tmp_path: Path):
    status, _, err, _ = await jailed(tmp_path, [str(tmp_path / "no-such-runtime")])
    assert status == 127
    assert f"butler jail: cannot start {tmp_path / 'no-such-runtime'}: " in err.decode()


async def test_linger_reports_the_runtimes_end_and_waits_for_what_it_left(
    bridge: str, tmp_path: Path
):
    late = tmp_path / "late"
    script = f"(sleep 0.3; echo done > {late}) & echo started; exit 4"
    status, out, _, _ = await jailed(tmp_path, ["/bin/sh", "-c", script], linger=True)
    assert out.startswith(b"started\n")
    assert b"\n\x00butler-jail-exit 1024\n" in out  # the wait status of exit 4
    assert late.read_text() == "done\n"  # the jail ended only after its background job
    assert status == 4
