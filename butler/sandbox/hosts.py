"""Which hosts a jailed runtime may reach: its butler, its model API, the owner's list.

The model API comes from the runtime's own configuration: every ``http(s)``
URL in a ``*_URL`` variable of its environment (``ANTHROPIC_BASE_URL``,
``OPENAI_BASE_URL``...) or in its ``[butler.runtime] args``, plus the CLI's
default API host when nothing points it elsewhere. A ``postgresql://`` URL
is no HTTP URL, so a declared ``DATABASE_URL`` never opens the database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from butler.sandbox.egress import Target, parse_authority

#: Each CLI's own API hosts, used when its configuration names no other.
DEFAULT_MODEL_HOSTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("api.anthropic.com",),
    "codex": ("api.openai.com",),
    "gemini": ("generativelanguage.googleapis.com",),
    "copilot": ("api.githubcopilot.com", "api.individual.githubcopilot.com"),
    "opencode": ("api.anthropic.com", "api.openai.com"),
}
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
HAS_PORT = re.compile(r"^(\[[^\]]*\]|[^:]+):\d+$")
URL = re.compile(r"\b(https?)://([^/\s\"'}]+)", re.IGNORECASE)


def url_targets(text: str) -> list[Target]:
    """Every ``http(s)://host[:port]`` found in ``text``, as targets."""
    found = []
    for scheme, authority in URL.findall(text):
        authority = authority.rsplit("@", 1)[-1]
        target = parse_authority(authority, 443 if scheme.lower() == "https" else 80)
        if target is not None:
            found.append(target)
    return found


def allow_entry(entry: str) -> list[Target]:
    """An ``allow_hosts`` entry: ``host`` (ports 443 and 80) or ``host:port``."""
    target = parse_authority(entry, 443)
    if target is None:
        return []
    if HAS_PORT.match(entry):
        return [target]
    return [target, Target(target.host, 80)]


def model_targets(runtime_type: str, env: Mapping[str, str], args: Iterable[str]) -> list[Target]:
    """The model API the runtime's configuration points at, else its default host."""
    found: list[Target] = []
    for name, value in env.items():
        if name.endswith("_URL"):
            found += url_targets(value)
    for arg in args:
        found += url_targets(arg)
    if not found:
        found = [Target(h, 443) for h in DEFAULT_MODEL_HOSTS.get(runtime_type, ())]
    return found


def with_loopback_aliases(targets: Iterable[Target]) -> frozenset[Target]:
    """A loopback target under each of its names, as a runtime may spell it any way."""
    out = set()
    for target in targets:
        if target.host in LOOPBACK_NAMES:
            out.update(Target(name, target.port) for name in LOOPBACK_NAMES)
        else:
            out.add(target)
    return frozenset(out)


def loopback_ports(targets: Iterable[Target]) -> tuple[int, ...]:
    """The host-loopback ports the jail must offer on its own loopback."""
    return tuple(sorted({t.port for t in targets if t.host in LOOPBACK_NAMES}))


def allowed_targets(
    runtime_type: str,
    runtime_env: Mapping[str, str],
    runtime_args: Iterable[str],
    mcp_url: str | None,
    allow_hosts: Iterable[str],
) -> frozenset[Target]:
    """Everything a session's jail may reach: its butler, its model API, the owner's list."""
    targets = model_targets(runtime_type, runtime_env, list(runtime_args))
    if mcp_url:
        targets += url_targets(mcp_url)
    for entry in allow_hosts:
        targets += allow_entry(entry)
    return with_loopback_aliases(targets)
