"""A real mail system on loopback: Debian's dovecot for IMAP, aiosmtpd for SMTP in between.

Dovecot runs as a private instance (its own config, folders and ports,
``ssl = no`` on 127.0.0.1 only) with users from a passwd-file; mail for
``NAME@home.test`` is delivered into NAME's maildir by ``dovecot-lda``, as a
mail server's delivery agent does. The SMTP server takes the butler's
replies (with its login) and the person's mail, and delivers both.

Like a provider, it DKIM-signs what its users submit with their login
(``send``, and the butler's replies) with the domain's key, whose record
:meth:`MailServer.records` gives for the test's DNS; mail handed over
without a login (``forge``, as anyone on the internet can) is delivered as
written. ``stamp`` adds the receiving server's own Authentication-Results
on top of what it delivers.

    with MailServer(folder) as mail:
        mail.send("alice", "butler", "Meds", "what is due today?")   # the phone writes
        mail.inbox("alice")                                            # what came back
"""

from __future__ import annotations

import asyncio
import contextlib
import imaplib
import os
import secrets
import shutil
import signal
import smtplib
import subprocess
import time
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.helpers import free_port, missing_tool
from tests.servers.dkim import DkimKey

DOMAIN = "home.test"
LDA = Path("/usr/lib/dovecot/dovecot-lda")
USERS = ("butler", "alice", "mallory")


class Relay:
    """aiosmtpd's handler: signs what a user submitted with their login, stamps the receiving
    server's verdict, and hands every recipient's copy to dovecot-lda."""

    def __init__(self, config: Path, key: DkimKey) -> None:
        self.config = config
        self.key = key
        #: The receiving server's Authentication-Results value for a message, if it adds one.
        self.stamp: Callable[[bytes], str | None] = lambda raw: None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content = envelope.original_content or envelope.content
        if session.authenticated:
            content = self.key.sign(content)
        verdict = self.stamp(content)
        if verdict is not None:
            content = f"Authentication-Results: {verdict}\r\n".encode() + content
        for recipient in envelope.rcpt_tos:
            user = recipient.split("@", 1)[0]
            argv = [str(LDA), "-c", str(self.config), "-d", user, "-f", envelope.mail_from]
            lda = await asyncio.create_subprocess_exec(*argv, stdin=subprocess.PIPE)
            await lda.communicate(content)
            if lda.returncode != 0:
                return f"451 delivery to {user} failed"
        return "250 delivered"


class MailServer:
    """Dovecot and an SMTP relay for one test; users butler, alice and mallory."""

    def __init__(self, folder: Path) -> None:
        if shutil.which("dovecot") is None or not LDA.exists():
            missing_tool("dovecot-imapd (Debian's dovecot)")
        self.folder = folder
        self.imap_port = free_port()
        self.smtp_port = free_port()
        self.passwords = {user: secrets.token_urlsafe(9) for user in USERS}
        self.config = self._write_config()
        self.key = DkimKey(DOMAIN)
        self.relay = Relay(self.config, self.key)
        self.dovecot: subprocess.Popen[bytes] | None = None
        self.smtp: Controller | None = None

    def records(self) -> dict[str, bytes]:
        """What the domain publishes in DNS: its DKIM key."""
        return self.key.records()

    def address(self, user: str) -> str:
        return f"{user}@{DOMAIN}"

    def _write_config(self) -> Path:
        for sub in ("run", "state", "home"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        # The mail processes run as nobody: let it reach its homes.
        self.folder.chmod(0o755)
        shutil.chown(self.folder / "home", "nobody", "nogroup")
        users = "".join(f"{u}:{{PLAIN}}{p}\n" for u, p in self.passwords.items())
        (self.folder / "users").write_text(users)
        config = self.folder / "dovecot.conf"
        config.write_text(
            DOVECOT.format(folder=self.folder, port=self.imap_port, name=self.folder.name)
        )
        return config

    def start(self) -> MailServer:
        self.start_imap()
        self.smtp = Controller(
            self.relay,
            hostname="127.0.0.1",
            port=self.smtp_port,
            authenticator=self._authenticate,
            auth_require_tls=False,
        )
        self.smtp.start()
        return self

    def start_imap(self) -> None:
        log = (self.folder / "dovecot.out").open("ab")
        self.dovecot = subprocess.Popen(
            ["dovecot", "-F", "-c", str(self.config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError):
                imaplib.IMAP4("127.0.0.1", self.imap_port).logout()
                return
            if self.dovecot.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dovecot did not start:\n{self.logs()}")
            time.sleep(0.05)

    def stop_imap(self) -> None:
        if self.dovecot is None or self.dovecot.poll() is not None:
            return
        os.killpg(self.dovecot.pid, signal.SIGTERM)
        try:
            self.dovecot.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.dovecot.pid, signal.SIGKILL)
            self.dovecot.wait()

    def stop(self) -> None:
        if self.smtp is not None:
            self.smtp.stop()
            self.smtp = None
        self.stop_imap()

    def __enter__(self) -> MailServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self) -> str:
        found = [self.folder / "dovecot.out", self.folder / "dovecot.log"]
        return "\n".join(p.read_text(errors="replace") for p in found if p.exists())

    def _authenticate(self, *args: Any) -> AuthResult:
        data = args[-1]  # (server, session, envelope, mechanism, auth data)
        if isinstance(data, LoginPassword):
            user = data.login.decode().split("@", 1)[0]
            if self.passwords.get(user) == data.password.decode():
                return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    # -- what the people do -------------------------------------------------

    def send(self, sender: str, to: str, subject: str, body: str, **headers: str) -> str:
        """``sender`` writes to ``to`` from their own account (signed); the message's id."""
        return self.submit(self.compose(sender, to, subject, body, **headers), login=sender)

    def compose(
        self, sender: str, to: str, subject: str, body: str, **headers: str
    ) -> EmailMessage:
        """A plain message from ``sender`` (a user here) to ``to``."""
        message = EmailMessage()
        message["From"] = f"{sender.title()} <{self.address(sender)}>"
        message["To"] = self.address(to)
        message["Subject"] = subject
        message["Message-ID"] = f"<{secrets.token_hex(8)}@{DOMAIN}>"
        for name, value in headers.items():
            message[name.replace("_", "-")] = value
        message.set_content(body)
        return message

    def submit(self, message: EmailMessage, login: str | None = None) -> str:
        """Send a whole message as written (attachments and all), from ``login``'s account
        (the provider signs it) or, without one, as a stranger's server hands mail over."""
        with smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=30) as smtp:
            if login is not None:
                smtp.login(login, self.passwords[login])
            smtp.send_message(message)
        return str(message["Message-ID"])

    def forge(self, message: EmailMessage) -> str:
        """Hand ``message`` over without a login, whatever its From says: not signed."""
        return self.submit(message)

    def inbox(self, user: str) -> list[EmailMessage]:
        """Every message in ``user``'s INBOX, oldest first, read as their mail client would."""
        import email
        import email.policy

        imap = imaplib.IMAP4("127.0.0.1", self.imap_port)
        try:
            imap.login(user, self.passwords[user])
            imap.select("INBOX", readonly=True)
            _, found = imap.uid("search", None, "ALL")
            messages = []
            for uid in found[0].split():
                _, data = imap.uid("fetch", uid, "(BODY.PEEK[])")
                raw = data[0][1]
                messages.append(email.message_from_bytes(raw, policy=email.policy.default))
            return messages
        finally:
            imap.logout()


DOVECOT = """\
base_dir = {folder}/run
state_dir = {folder}/state
log_path = {folder}/dovecot.log
instance_name = butler-test-{name}
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = dovecot
default_login_user = dovenull
first_valid_uid = 1
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%n {folder}/users
}}
userdb {{
  driver = static
  args = uid=nobody gid=nogroup home={folder}/home/%n
}}
mail_location = maildir:~/Maildir
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""
