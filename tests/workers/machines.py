""" "Machines" for worker tests: network namespaces this test makes, joined by veth links.

The daemon stays in the test's own namespace, bound to its end of a link; each
worker runs in a namespace of its own whose only way out is its link. (The
filesystem is shared, so the test's PostgreSQL, on a Unix socket, answers both:
what crosses the link is the runtime calling its butler.)
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.helpers import require_tool

_NUMBERS = itertools.count(1)


@dataclass(frozen=True)
class Machine:
    """A network namespace; ``address`` is its end of the link, ``peer`` the test's."""

    namespace: str
    address: str | None
    peer: str | None

    def argv(self, *command: str) -> list[str]:
        """``command`` run inside this machine."""
        return [require_tool("ip"), "netns", "exec", self.namespace, *command]


def _ip(*args: str) -> None:
    subprocess.run([require_tool("ip"), *args], check=True, capture_output=True)


@contextlib.contextmanager
def machine(linked: bool = True) -> Iterator[Machine]:
    """A namespace, linked to the test's by a veth pair unless ``linked`` is False."""
    if os.geteuid() != 0:
        pytest.fail("worker tests make network namespaces: run them as root (CI does)", False)
    tag = uuid.uuid4().hex[:6]
    namespace = f"butler-w-{tag}"
    _ip("netns", "add", namespace)
    try:
        _ip("-n", namespace, "link", "set", "lo", "up")
        if not linked:
            yield Machine(namespace, None, None)
            return
        subnet = f"10.213.{(os.getpid() + next(_NUMBERS)) % 250}"
        outside, inside = f"bwo-{tag}", f"bwi-{tag}"
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        try:
            _ip("link", "set", inside, "netns", namespace)
            _ip("addr", "add", f"{subnet}.1/30", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("-n", namespace, "addr", "add", f"{subnet}.2/30", "dev", inside)
            _ip("-n", namespace, "link", "set", inside, "up")
            yield Machine(namespace, f"{subnet}.2", f"{subnet}.1")
        finally:
            subprocess.run([require_tool("ip"), "link", "del", outside], capture_output=True)
    finally:
        subprocess.run([require_tool("ip"), "netns", "del", namespace], capture_output=True)
