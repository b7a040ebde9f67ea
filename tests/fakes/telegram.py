"""The fake Bot API (tests/fakes/telegram_api.py) reached at api.telegram.org, as Apprise does.

Apprise's Telegram plugin has the API's address written into it
(``https://api.telegram.org/bot``); nothing in a ``tgram://`` URL changes
it. So the plugin is left as it is and the network is what changes, as a
company proxy would: ``HTTPS_PROXY`` names a CONNECT proxy on loopback that
tunnels ``api.telegram.org:443`` (and nothing else) to a TLS front with a
certificate for ``api.telegram.org`` signed by a test CA (which
``REQUESTS_CA_BUNDLE`` makes requests trust); the front hands each request
to the one fake Bot API the channel tests use too. The plugin's own URL
building, requests and answer parsing all run unchanged.

    with TelegramAtItsAddress(tmp_path) as telegram:
        env = telegram.env()          # for the daemon, or monkeypatch.setenv
        ... send to tgram://{telegram.token}/{telegram.chat_id} ...
        telegram.wait(1)              # [{"method": "sendMessage", "text": ...}, ...]
"""

from __future__ import annotations

import datetime as dt
import secrets
import select
import socket
import ssl
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import StreamRequestHandler, ThreadingTCPServer
from typing import Any

from tests.fakes.telegram_api import ALICE, FakeTelegram

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


class TelegramAtItsAddress:
    """The fake Bot API behind TLS as api.telegram.org, and a CONNECT proxy that leads there.

    The chat a notification goes to is a person's who wrote to the bot first, as on
    Telegram (a bot cannot open a chat).
    """

    def __init__(self, folder: Path) -> None:
        self.api = FakeTelegram(
            token=f"{secrets.randbelow(10**9) + 10**9}:{secrets.token_urlsafe(26)}"
        )
        self.token = self.api.token
        self.chat_id = str(ALICE.id)
        self.tunnels: list[str] = []
        self.ca, cert, key = make_certificates(folder)
        self._front = ThreadingHTTPServer(("127.0.0.1", 0), self._front_handler())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._front.socket = context.wrap_socket(self._front.socket, server_side=True)
        self._proxy = ThreadingTCPServer(("127.0.0.1", 0), self._proxy_handler())
        self._proxy.daemon_threads = True

    def env(self) -> dict[str, str]:
        """What a process needs for requests to reach the fake as api.telegram.org."""
        return {
            "HTTPS_PROXY": f"http://127.0.0.1:{self._proxy.server_address[1]}",
            "REQUESTS_CA_BUNDLE": str(self.ca),
        }

    def url(self) -> str:
        """An Apprise URL for the fake's bot and chat (written out: a test's own secret)."""
        return f"tgram://{self.token}/{self.chat_id}"

    def wait(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        return self.api.wait(count, timeout)

    async def until(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        return await self.api.until(count, timeout)

    def _front_handler(self) -> type[BaseHTTPRequestHandler]:
        api = self.api

        class Front(BaseHTTPRequestHandler):
            """Hands each request on to the fake Bot API as it came, and its answer back."""

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = urllib.request.Request(api.api_url + self.path, data=body)
                request.add_header("Content-Type", self.headers.get("Content-Type", ""))
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, data = answer.status, answer.read()
                except urllib.error.HTTPError as refused:
                    status, data = refused.code, refused.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Front

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
                upstream = socket.create_connection(fake._front.server_address[:2])
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                _pipe(self.connection, upstream)

        return Tunnel

    def __enter__(self) -> TelegramAtItsAddress:
        self.api.start()
        self.api.send("/start", user=ALICE)  # the person opens the chat with the bot
        for server in (self._front, self._proxy):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self._front, self._proxy):
            server.shutdown()
            server.server_close()
        self.api.stop()


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
