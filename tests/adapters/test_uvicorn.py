"""uvicorn under butler/adapters/uvicorn.py: a server that takes no signal, stopped by its caller.

A roster drains every butler before any stops, so the signals are the roster's. Were
uvicorn to install its handlers some other way than ``capture_signals`` (or to stop
serving on anything but ``should_exit``), a SIGTERM would stop a butler undrained, or
the roster could not stop it at all: both are asked here of the installed uvicorn, in a
process of its own, on its main thread (uvicorn installs handlers there only).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow  # a process of its own: it signals itself

SCRIPT = r"""
import asyncio, json, os, signal, socket
import uvicorn
from butler.adapters.uvicorn import Server

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})

async def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    loop = asyncio.get_running_loop()
    taken = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, taken.set)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(taken.wait(), 10)
    await asyncio.sleep(0.2)  # a handler of uvicorn's would have stopped it by now
    still = not serving.done() and not server.should_exit
    server.stop()
    await asyncio.wait_for(serving, 10)
    print(json.dumps({"ours_got_it": taken.is_set(), "still_serving": still}))

asyncio.run(main())
"""


def test_a_signal_reaches_the_callers_handler_and_stop_ends_the_server():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    # Killed by the SIGTERM uvicorn raises again once it stopped: its handler was in place.
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert json.loads(done.stdout) == {"ours_got_it": True, "still_serving": True}


PEERS = r"""
import asyncio, json, socket
import uvicorn
from butler.adapters.uvicorn import Server

seen = []

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    seen.append(list(scope["client"]))
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})

async def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    reader, writer = await asyncio.open_connection(*sock.getsockname())
    writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    await reader.readuntil(b"ok")
    while_open = [list(p) for p in server.open_peers()]
    writer.close()
    await writer.wait_closed()
    for _ in range(200):
        if not server.open_peers():
            break
        await asyncio.sleep(0.01)
    after = [list(p) for p in server.open_peers()]
    server.stop()
    await asyncio.wait_for(serving, 10)
    print(json.dumps({"scope": seen, "open": while_open, "after_close": after}))

asyncio.run(main())
"""


def test_open_peers_names_a_kept_alive_connection_as_its_requests_scope_does_until_closed():
    done = subprocess.run(
        [sys.executable, "-c", PEERS], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["open"] == seen["scope"] and len(seen["scope"]) == 1
    assert seen["after_close"] == []
