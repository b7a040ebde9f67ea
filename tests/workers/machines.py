""" "Machines" for worker tests: network namespaces this test makes, joined by veth links.

The daemon stays in the test's own namespace, bound to its end of a link; each
worker runs in a namespace of its own whose only way out is its link. (The
filesystem is shared, so the test's PostgreSQL, on a Unix socket, answers both:
what crosses the link is the runtime calling its butler.)
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import random
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.helpers import require_tool

#: Links are /30s of this range. Tests in other xdist processes make links at the same
#: time, so a subnet is chosen under a lock among those no interface holds yet: two
#: links with one subnet route each other's replies to the wrong machine (once derived
#: from the process id, two neighbouring xdist workers' pids collided and a session's
#: callback never came back).
_RANGE = ipaddress.ip_network("10.213.0.0/16")
_LOCK = "/tmp/butler-test-machines.lock"


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
        outside, inside = f"bwo-{tag}", f"bwi-{tag}"
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        try:
            _ip("link", "set", inside, "netns", namespace)
            with _subnet_lock():
                subnet = _free_subnet()
                _ip("addr", "add", f"{subnet[1]}/30", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("-n", namespace, "addr", "add", f"{subnet[2]}/30", "dev", inside)
            _ip("-n", namespace, "link", "set", inside, "up")
            yield Machine(namespace, str(subnet[2]), str(subnet[1]))
        finally:
            subprocess.run([require_tool("ip"), "link", "del", outside], capture_output=True)
    finally:
        subprocess.run([require_tool("ip"), "netns", "del", namespace], capture_output=True)


@contextlib.contextmanager
def _subnet_lock() -> Iterator[None]:
    with open(_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _free_subnet() -> ipaddress.IPv4Network:
    """A /30 of the range that no interface of this namespace has an address in."""
    shown = subprocess.run(
        [require_tool("ip"), "-o", "-4", "addr", "show"], check=True, capture_output=True, text=True
    ).stdout
    taken = {
        ipaddress.ip_interface(word).network
        for line in shown.splitlines()
        for word in line.split()[3:4]
    }
    subnets = list(_RANGE.subnets(new_prefix=30))
    for subnet in random.sample(subnets, 64):
        if not any(subnet.overlaps(net) for net in taken):
            return subnet
    raise RuntimeError(f"no free /30 in {_RANGE} for a test machine's link")
