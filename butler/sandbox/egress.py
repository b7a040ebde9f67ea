"""The daemon's side of a jail's only way out: a filtering HTTP proxy on a Unix socket.

It speaks just enough HTTP: ``CONNECT host:port`` (TLS and the bridge's
loopback forwards) and absolute-form plain-HTTP requests
(``GET http://host/path``). A target is allowed only when its ``host:port``
is in the jail's allow-list; everything else gets a ``403`` naming the host
and the setting that opens it, is logged, and is counted for the session's
row. An allowed target it cannot reach gets a ``502`` saying what happened
(its name did not resolve, it refused the connection, it did not answer).
What went wrong is kept, one line each, so that a session that fails says
what the proxy saw, not only the runtime's guess (a CLI shown a refused
tunnel blames the proxy's credentials). Every read is bounded in size and time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("butler.sandbox")

#: Longest request head accepted, and how long a client may take to send it.
HEAD_LIMIT = 16 * 1024
HEAD_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
CHUNK = 64 * 1024
#: At most this many distinct refused hosts are kept for the row; the count goes on.
BLOCKED_HOSTS_LIMIT = 50
#: At most this many distinct accounts of trouble are kept, and this many go into an error.
TROUBLE_LIMIT = 20
TROUBLE_SHOWN = 3
#: The setting that lets a jail reach one more host.
ALLOW_SETTING = "[butler.sandbox] allow_hosts"


def unreachable(target: Target, exc: BaseException) -> str:
    """What stopped the proxy reaching ``target``, in a person's words."""
    if isinstance(exc, socket.gaierror):
        return f"{target}: DNS lookup of {target.host} failed ({exc.strerror or exc})"
    if isinstance(exc, ConnectionRefusedError):
        return f"{target}: connection refused"
    if isinstance(exc, TimeoutError):
        return f"{target}: no answer within {CONNECT_TIMEOUT_S:g} s"
    return f"{target}: {getattr(exc, 'strerror', None) or exc}"


@dataclass(frozen=True)
class Target:
    """One host and port a jail may reach."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass
class Egress:
    """One jail's proxy: its socket, what it allows, what it refused."""

    socket_path: Path
    allowed: frozenset[Target]
    label: str = ""
    #: The setting that lets this jail reach one more host, named in a refusal.
    setting: str = ALLOW_SETTING
    blocked: Counter[str] = field(default_factory=Counter)
    #: What went wrong, one line each (refused and unreachable targets), first seen first.
    trouble: Counter[str] = field(default_factory=Counter)
    _server: asyncio.AbstractServer | None = None

    async def start(self) -> Egress:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self._server = await asyncio.start_unix_server(self._handle, path=str(self.socket_path))
        os.chmod(self.socket_path, 0o600)
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def __aenter__(self) -> Egress:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def summary(self) -> dict[str, object]:
        """What goes on the session row under ``metadata.sandbox``."""
        hosts = [host for host, _ in self.blocked.most_common(BLOCKED_HOSTS_LIMIT)]
        summary: dict[str, object] = {"blocked": sum(self.blocked.values()), "blocked_hosts": hosts}
        if self.trouble:
            summary["proxy_saw"] = list(self.trouble)
        return summary

    def account(self) -> str | None:
        """One line of what went wrong through this proxy, for a failed session's error."""
        if not self.trouble:
            return None
        seen = list(self.trouble)
        more = f" (and {len(seen) - TROUBLE_SHOWN} more)" if len(seen) > TROUBLE_SHOWN else ""
        return "the jail's proxy saw: " + "; ".join(seen[:TROUBLE_SHOWN]) + more

    def _note(self, line: str) -> None:
        if line in self.trouble or len(self.trouble) < TROUBLE_LIMIT:
            self.trouble[line] += 1

    def _refuse(self, host: str, why: str) -> bytes:
        self.blocked[host[:255]] += 1
        self._note(f"{host[:255]} refused: {why}")
        log.warning(
            "sandbox refused a connection",
            extra={"session": self.label, "host": host[:255], "reason": why},
        )
        return _answer("403 Forbidden", f"butler sandbox: {host[:255]} refused: {why}")

    def _unreachable(self, target: Target, exc: BaseException) -> bytes:
        what = unreachable(target, exc)
        self._note(f"{what} (an allowed host)")
        log.warning(
            "sandbox target unreachable",
            extra={"session": self.label, "target": str(target), "error": what},
        )
        return _answer("502 Bad Gateway", f"butler sandbox: {what}")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        try:
            await self._route(head, reader, writer)
        except (OSError, ValueError):
            pass
        finally:
            writer.close()

    async def _route(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        request_line, _, rest = head.partition(b"\r\n")
        method, _, remainder = request_line.decode("latin-1").partition(" ")
        uri = remainder.rsplit(" ", 1)[0]
        if method.upper() == "CONNECT":
            target = parse_authority(uri, 443)
            forward = b""
        else:
            target, path = parse_absolute(uri)
            forward = f"{method} {path} HTTP/1.1\r\n".encode() + _one_request(rest)
        if target is None:
            writer.write(self._refuse(uri[:255] or "?", "not a host:port or http:// URL"))
            return
        if target not in self.allowed:
            why = f"port {target.port} of {target.host} is not allowed ({self.setting} opens it)"
            writer.write(self._refuse(target.host, why))
            return
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                up_reader, up_writer = await asyncio.open_connection(target.host, target.port)
        except (OSError, TimeoutError) as exc:
            writer.write(self._unreachable(target, exc))
            return
        if forward:
            up_writer.write(forward)
        else:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        try:
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        finally:
            up_writer.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


def _answer(status: str, text: str) -> bytes:
    """A whole HTTP response of one line of text, closing the connection."""
    body = f"{text}\n".encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


#: Headers of the client's hop to the proxy, not the host's.
HOP_HEADERS = (b"proxy-", b"connection:", b"keep-alive:")


def _one_request(rest: bytes) -> bytes:
    """The headers of a plain-HTTP request forwarded to its host, asking it to close after.

    Only a connection's first request is read here (its target checked, its head
    rewritten to origin form); the rest of the connection is copied as it comes. A
    client keeping the connection alive (Claude Code's MCP client does) would send its
    next requests in proxy form to the host, which does not take them (the butler's MCP
    server answered them 401: a session on a worker lost its tools). With the host
    closing after one answer, every request comes through here.
    """
    lines = [ln for ln in rest.split(b"\r\n") if ln and not ln.lower().startswith(HOP_HEADERS)]
    return b"\r\n".join([*lines, b"Connection: close", b"", b""])


def parse_authority(text: str, default_port: int) -> Target | None:
    """``host:port``, ``[v6]:port`` or ``host`` as a target; None when it is neither."""
    text = text.strip()
    if not text or len(text) > 300 or any(c in text for c in "/@ \t"):
        return None
    if text.startswith("["):
        host, _, tail = text[1:].partition("]")
        port_text = tail.removeprefix(":") or str(default_port)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        return None  # an IPv6 address without its brackets is ambiguous
    else:
        host, port_text = text, str(default_port)
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return Target(host.lower().rstrip("."), int(port_text))


def parse_absolute(uri: str) -> tuple[Target | None, str]:
    """``http://host[:port]/path`` as its target and origin-form path."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.lower() != "http":
        return None, ""
    authority, slash, path = rest.partition("/")
    return parse_authority(authority, 80), "/" + path if slash else "/"
