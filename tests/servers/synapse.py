"""A real Matrix homeserver for tests: Synapse from PyPI, on loopback, SQLite, its own folder.

Synapse is heavy (Twisted and friends), so it lives in a virtualenv of its
own in a cache folder, installed once (``python -m tests.servers.synapse
--install``, which ``scripts/setup-dev`` runs) and reused by every run. One
server per test process (the ``synapse`` fixture is session-scoped); tests
make their own users and rooms, so they never see each other's messages.

    synapse.register("person") -> MatrixUser (user id, password, access token)
    synapse.create_room(person, alias) -> room id (a public room, for notify's bot)
    synapse.direct_room(person, bot_id) -> room id (a private room, for a channel's bot)
    synapse.group_room(person, invite) / join(person, room) -> a room of several people
    synapse.say(person, room, text) / upload(person, data, type) -> event id / mxc:// address
    synapse.download(person, mxc) -> the file's bytes
    synapse.messages(person, room_id) -> the room's m.room.message events
    synapse.typing(person, room, since) / position(person) -> who types, sync tokens
    synapse.restart() -> the same server again: same port, keys, rooms and messages
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port, missing_tool

#: The Synapse the tests run: pinned, so a new release cannot change them unseen.
VERSION = "1.163.2"
#: Where the Synapse virtualenv is kept between runs.
CACHE = Path(os.environ.get("BUTLER_TEST_CACHE", "~/.cache/butler-tests")).expanduser()
STARTUP_TIMEOUT_S = 120.0

# Every limit out of the way: a test registers and sends in quick bursts.
_NO_LIMIT = {"per_second": 10000, "burst_count": 10000}
_CONFIG: dict[str, Any] = {
    "server_name": "localhost",
    "report_stats": False,
    "trusted_key_servers": [],
    "suppress_key_server_warning": True,
    "enable_metrics": False,
    "enable_registration": False,
    "bcrypt_rounds": 4,  # passwords of throwaway users: no need to make them slow to check
    "rc_message": _NO_LIMIT,
    "rc_registration": _NO_LIMIT,
    "rc_joins": {"local": _NO_LIMIT, "remote": _NO_LIMIT},
    "rc_login": {"address": _NO_LIMIT, "account": _NO_LIMIT, "failed_attempts": _NO_LIMIT},
    "rc_admin_redaction": _NO_LIMIT,
}


def venv() -> Path:
    return CACHE / f"synapse-{VERSION}"


def install() -> Path:
    """The Synapse virtualenv, made once (under a lock: xdist workers start together)."""
    folder = venv()
    marker = folder / "installed"
    if marker.exists():
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"synapse-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        python = shutil.which("python3.11") or sys.executable
        subprocess.run([python, "-m", "venv", str(folder)], check=True)
        pip = [str(folder / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, f"matrix-synapse=={VERSION}"], check=True)
        marker.write_text(VERSION)
    return folder


@dataclass(frozen=True)
class MatrixUser:
    """A user of the test homeserver."""

    name: str
    password: str
    token: str

    @property
    def user_id(self) -> str:
        return f"@{self.name}:localhost"


class Synapse:
    """One running homeserver and what a test does with it."""

    def __init__(self, folder: Path, python: Path) -> None:
        self.folder = folder
        self.python = python
        self.port = free_port()
        self.shared_secret = secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None
        self.config = self._write_config()  # once: a restart keeps its port and keys

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        key = base64.b64encode(os.urandom(32)).decode().rstrip("=")
        (self.folder / "signing.key").write_text(f"ed25519 a_test {key}\n")
        listener = {
            "port": self.port,
            "bind_addresses": ["127.0.0.1"],
            "type": "http",
            "tls": False,
            "x_forwarded": False,
            "resources": [{"names": ["client"], "compress": False}],
        }
        config = {
            **_CONFIG,
            "pid_file": str(self.folder / "homeserver.pid"),
            "listeners": [listener],
            "database": {"name": "sqlite3", "args": {"database": str(self.folder / "hs.db")}},
            "media_store_path": str(self.folder / "media"),
            "signing_key_path": str(self.folder / "signing.key"),
            "registration_shared_secret": self.shared_secret,
            "macaroon_secret_key": secrets.token_hex(16),
            "form_secret": secrets.token_hex(16),
        }
        path = self.folder / "homeserver.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        return path

    def start(self) -> Synapse:
        log = (self.folder / "homeserver.log").open("ab")
        self.proc = subprocess.Popen(
            [str(self.python), "-m", "synapse.app.homeserver", "-c", str(self.config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"synapse exited at start:\n{self.logs()[-3000:]}")
            with contextlib.suppress(OSError):
                self.call("GET", "/_matrix/client/versions")
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"synapse did not answer within {STARTUP_TIMEOUT_S} s")
            time.sleep(0.1)

    def logs(self) -> str:
        return (self.folder / "homeserver.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> None:
        """Stop and start again: same port, same keys, same rooms and messages."""
        self.stop()
        self.start()

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """One request to the client-server API; its JSON answer."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def register(self, prefix: str) -> MatrixUser:
        """A new user, made through the shared-secret admin API (as register_new_matrix_user)."""
        name = f"{prefix}{secrets.token_hex(4)}"
        password = secrets.token_urlsafe(12)
        nonce = self.call("GET", "/_synapse/admin/v1/register")["nonce"]
        mac = hmac.new(self.shared_secret.encode(), digestmod=hashlib.sha1)
        mac.update(f"{nonce}\0{name}\0{password}\0notadmin".encode())
        body = {"nonce": nonce, "username": name, "password": password, "mac": mac.hexdigest()}
        answer = self.call("POST", "/_synapse/admin/v1/register", {**body, "admin": False})
        return MatrixUser(name, password, answer["access_token"])

    def create_room(self, owner: MatrixUser, alias: str) -> str:
        """A public room with ``#alias:localhost``, so a bot can join it by name."""
        body = {"room_alias_name": alias, "preset": "public_chat"}
        return self.call("POST", "/_matrix/client/v3/createRoom", body, owner.token)["room_id"]

    def direct_room(self, person: MatrixUser, bot_id: str, encrypted: bool = False) -> str:
        """A private room ``person`` makes and invites the bot to (encrypted as Element would)."""
        body: dict[str, Any] = {"preset": "private_chat", "invite": [bot_id], "is_direct": True}
        if encrypted:
            algorithm = {"algorithm": "m.megolm.v1.aes-sha2"}
            state = {"type": "m.room.encryption", "state_key": "", "content": algorithm}
            body["initial_state"] = [state]
        return self.call("POST", "/_matrix/client/v3/createRoom", body, person.token)["room_id"]

    def group_room(self, owner: MatrixUser, invite: list[str], name: str = "Family") -> str:
        """A private room of several people: ``owner`` makes it and invites ``invite``."""
        body = {"preset": "private_chat", "invite": invite, "name": name}
        return self.call("POST", "/_matrix/client/v3/createRoom", body, owner.token)["room_id"]

    def join(self, person: MatrixUser, room: str) -> None:
        """``person`` accepts an invite to ``room``."""
        self.call("POST", f"/_matrix/client/v3/join/{_q(room)}", {}, person.token)

    def say(self, person: MatrixUser, room: str, content: dict[str, Any] | str) -> str:
        """``person`` sends a message (text, or a whole content) to ``room``; its event id."""
        if isinstance(content, str):
            content = {"msgtype": "m.text", "body": content}
        txn = secrets.token_hex(8)
        path = f"/_matrix/client/v3/rooms/{_q(room)}/send/m.room.message/{txn}"
        return self.call("PUT", path, content, person.token)["event_id"]

    def upload(self, person: MatrixUser, data: bytes, media_type: str) -> str:
        """Put a file in the media repository; its mxc:// address."""
        request = urllib.request.Request(
            f"{self.url}/_matrix/media/v3/upload", data=data, method="POST"
        )
        request.add_header("Content-Type", media_type)
        request.add_header("Authorization", f"Bearer {person.token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["content_uri"]

    def download(self, reader: MatrixUser, uri: str) -> bytes:
        """The bytes at an mxc:// address, through the authenticated media API."""
        server, media = uri.removeprefix("mxc://").split("/", 1)
        request = urllib.request.Request(
            f"{self.url}/_matrix/client/v1/media/download/{_q(server)}/{_q(media)}"
        )
        request.add_header("Authorization", f"Bearer {reader.token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()

    def messages(self, reader: MatrixUser, room: str) -> list[dict[str, Any]]:
        """The room's ``m.room.message`` events, oldest first: sender, event id and content."""
        path = f"/_matrix/client/v3/rooms/{_q(room)}/messages?dir=b&limit=200"
        events = self.call("GET", path, token=reader.token)["chunk"]
        return [
            {"sender": ev["sender"], "event_id": ev["event_id"], **ev["content"]}
            for ev in reversed(events)
            if ev["type"] == "m.room.message"
        ]

    def typing(self, reader: MatrixUser, room: str, since: str) -> tuple[list[str], str]:
        """Who ``reader``'s client is told types in ``room`` after ``since``, and the next token.

        Start with ``since`` from :meth:`position`; the call long-polls for up to a second.
        """
        query = urllib.parse.urlencode({"since": since, "timeout": 1000})
        sync = self.call("GET", f"/_matrix/client/v3/sync?{query}", token=reader.token)
        joined = sync.get("rooms", {}).get("join", {}).get(room, {})
        typing = [
            user
            for event in joined.get("ephemeral", {}).get("events", [])
            if event["type"] == "m.typing"
            for user in event["content"].get("user_ids", [])
        ]
        return typing, sync["next_batch"]

    def position(self, reader: MatrixUser) -> str:
        """``reader``'s sync token now: what comes after it is news."""
        return self.call("GET", "/_matrix/client/v3/sync?timeout=0", token=reader.token)[
            "next_batch"
        ]


def _q(room: str) -> str:
    return urllib.parse.quote(room, safe="")


@pytest.fixture(scope="session")
def synapse() -> Iterator[Synapse]:
    """A Synapse homeserver for this test process."""
    try:
        folder = install()
    except (OSError, subprocess.CalledProcessError) as exc:
        missing_tool(f"matrix-synapse {VERSION} ({exc})")
    with tempfile.TemporaryDirectory(prefix="butler-synapse-") as path:
        server = Synapse(Path(path), folder / "bin" / "python").start()
        try:
            yield server
        finally:
            server.stop()


if __name__ == "__main__":
    # scripts/setup-dev: "--installed" answers by its exit status, "--install" installs.
    if sys.argv[1:] == ["--installed"]:
        sys.exit(0 if (venv() / "installed").exists() else 1)
    if sys.argv[1:] != ["--install"]:
        sys.exit("usage: python -m tests.servers.synapse --install | --installed")
    print(f"synapse {VERSION} in {install()}")
