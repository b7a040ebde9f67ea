"""Another host a worker's machine can reach: a network namespace of its own, on a veth
link to the worker's namespace only, serving HTTP. The jail on the worker must keep
its sessions from it although the worker's machine itself reaches it."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import free_port, require_tool
from tests.workers.machines import Machine

_NUMBERS = itertools.count(1)
PAGE = "the far host's page\n"


def _ip(*args: str) -> None:
    subprocess.run([require_tool("ip"), *args], check=True, capture_output=True)


def status_from(place: Machine, url: str) -> str:
    """What ``url`` answers a plain client on ``place`` (no jail, no proxy)."""
    code = (
        "import sys, urllib.request\n"
        "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
        "print(opener.open(sys.argv[1], timeout=5).status)"
    )
    done = subprocess.run(
        place.argv(sys.executable, "-c", code, url), capture_output=True, text=True, timeout=30
    )
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


@contextlib.contextmanager
def far_host(place: Machine, root: Path) -> Iterator[str]:
    """A host linked to ``place`` alone, serving ``PAGE``; yields its URL."""
    tag = uuid.uuid4().hex[:6]
    namespace = f"butler-h-{tag}"
    subnet = f"10.214.{(os.getpid() + next(_NUMBERS)) % 250}"
    near, far = f"bhn-{tag}", f"bhf-{tag}"
    _ip("netns", "add", namespace)
    server = None
    try:
        _ip("-n", namespace, "link", "set", "lo", "up")
        _ip("link", "add", near, "type", "veth", "peer", "name", far)
        _ip("link", "set", near, "netns", place.namespace)
        _ip("link", "set", far, "netns", namespace)
        _ip("-n", place.namespace, "addr", "add", f"{subnet}.1/30", "dev", near)
        _ip("-n", place.namespace, "link", "set", near, "up")
        _ip("-n", namespace, "addr", "add", f"{subnet}.2/30", "dev", far)
        _ip("-n", namespace, "link", "set", far, "up")
        site = root / "far-site"
        site.mkdir()
        (site / "index.html").write_text(PAGE, encoding="utf-8")
        port = free_port()
        serve = ["-m", "http.server", "--bind", f"{subnet}.2", "--directory", str(site)]
        server = subprocess.Popen(
            [require_tool("ip"), "netns", "exec", namespace, sys.executable, *serve, str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://{subnet}.2:{port}/"
        deadline = time.monotonic() + 30
        while status_from(place, url) != "200":
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"the far host never answered at {url}")
            time.sleep(0.2)
        yield url
    finally:
        if server is not None:
            server.kill()
            server.wait(10)
        # The link's two ends go with their namespaces.
        subprocess.run([require_tool("ip"), "netns", "del", namespace], capture_output=True)
        subprocess.run(
            [require_tool("ip"), "-n", place.namespace, "link", "del", near], capture_output=True
        )
