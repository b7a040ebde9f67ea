"""A fake Telegram Bot API on loopback that speaks the real HTTP API, and the way there.

Apprise's Telegram plugin has the API's address written into it
(``https://api.telegram.org/bot``); nothing in a ``tgram://`` URL changes
it. So the plugin is left as it is and the network is what changes, as a
company proxy would: ``HTTPS_PROXY`` names a CONNECT proxy on loopback that
tunnels ``api.telegram.org:443`` (and nothing else) to this fake, which
presents a certificate for ``api.telegram.org`` signed by a test CA that
``REQUESTS_CA_BUNDLE`` makes requests trust. The plugin's own URL building,
requests and answer parsing all run unchanged.

    with FakeTelegram(tmp_path) as telegram:
        env = telegram.env()          # for the daemon, or monkeypatch.setenv
        ... send to tgram://{telegram.token}/{telegram.chat_id} ...
        telegram.wait(1)              # [{"method": "sendMessage", "text": ...}, ...]
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import email.policy
import json
import secrets
import select
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import StreamRequestHandler, ThreadingTCPServer
from typing import Any

API_HOST = "api.telegram.org"


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A test CA and a certificate for ``api.telegram.org`` it signed: (ca, cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("butler test CA"))
        .issuer_name(name("butler test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(API_HOST))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(API_HOST)]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(cert.public_bytes(pem))
    paths[2].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


def _form(content_type: str, body: bytes) -> dict[str, Any]:
    """A multipart/form-data body as fields; a file field as {"filename", "content"}."""
    raw = f"Content-Type: {content_type}\r\n\r\n".encode() + body
    message = email.message_from_bytes(raw, policy=email.policy.HTTP)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        field = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        fields[field] = {"filename": filename, "content": data} if filename else data.decode()
    return fields


class FakeTelegram:
    """The Bot API (TLS, as api.telegram.org) and a CONNECT proxy that leads to it."""

    def __init__(self, folder: Path) -> None:
        self.token = f"{secrets.randbelow(10**9) + 10**9}:{secrets.token_urlsafe(26)}"
        self.chat_id = str(secrets.randbelow(10**9) + 10**8)
        self.calls: list[dict[str, Any]] = []
        self.tunnels: list[str] = []
        self._arrived = threading.Condition()
        self.ca, cert, key = make_certificates(folder)
        self._api = ThreadingHTTPServer(("127.0.0.1", 0), self._api_handler())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._api.socket = context.wrap_socket(self._api.socket, server_side=True)
        self._proxy = ThreadingTCPServer(("127.0.0.1", 0), self._proxy_handler())
        self._proxy.daemon_threads = True

    def env(self) -> dict[str, str]:
        """What a process needs for requests to reach this fake as api.telegram.org."""
        return {
            "HTTPS_PROXY": f"http://127.0.0.1:{self._proxy.server_address[1]}",
            "REQUESTS_CA_BUNDLE": str(self.ca),
        }

    def url(self) -> str:
        """An Apprise URL for the fake's bot and chat (written out: a test's own secret)."""
        return f"tgram://{self.token}/{self.chat_id}"

    def wait(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.calls) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.calls)} of {count} Bot API calls in {timeout} s")
                self._arrived.wait(left)
            return list(self.calls)

    def _answer(self, token: str, method: str, fields: dict[str, Any]) -> tuple[int, dict]:
        """What the real Bot API answers (its JSON shapes and errors)."""
        if token != self.token:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        if method == "getMe":
            return 200, {"ok": True, "result": {"id": 1, "is_bot": True, "username": "butler_bot"}}
        if method not in ("sendMessage", "sendDocument", "sendPhoto"):
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        if str(fields.get("chat_id")) != self.chat_id:
            return 400, {
                "ok": False,
                "error_code": 400,
                "description": "Bad Request: chat not found",
            }
        with self._arrived:
            self.calls.append({"method": method, **fields})
            self._arrived.notify_all()
        message = {"message_id": len(self.calls), "date": int(time.time()), "chat": {"id": 1}}
        return 200, {"ok": True, "result": message}

    def _api_handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kind = self.headers.get("Content-Type", "")
                if kind.startswith("multipart/form-data"):
                    fields = _form(kind, body)
                else:
                    fields = json.loads(body or b"{}")
                bot, _, method = self.path.lstrip("/").partition("/")
                status, answer = fake._answer(bot.removeprefix("bot"), method, fields)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def _proxy_handler(self) -> type[StreamRequestHandler]:
        fake = self

        class Tunnel(StreamRequestHandler):
            def handle(self) -> None:
                request = self.rfile.readline(8192).decode("latin-1").split()
                while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass
                target = request[1] if len(request) > 1 else ""
                fake.tunnels.append(target)
                if request[:1] != ["CONNECT"] or target != f"{API_HOST}:443":
                    self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                    return
                upstream = socket.create_connection(fake._api.server_address[:2])
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                _pipe(self.connection, upstream)

        return Tunnel

    async def until(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        """:meth:`wait` from a test's event loop, which goes on running meanwhile."""
        return await asyncio.to_thread(self.wait, count, timeout)

    def __enter__(self) -> FakeTelegram:
        for server in (self._api, self._proxy):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self._api, self._proxy):
            server.shutdown()
            server.server_close()


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    sockets = [client, upstream]
    try:
        while True:
            readable, _, _ = select.select(sockets, [], [], 30)
            if not readable:
                return
            for sock in readable:
                data = sock.recv(65536)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
    finally:
        upstream.close()
