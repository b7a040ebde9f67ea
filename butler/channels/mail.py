"""Email: a mailbox read with IMAP IDLE (aioimaplib), answered over SMTP (aiosmtplib).

The cursor is the mailbox's UID validity and the next UID to read: a first
start begins after what is already there, and a mailbox whose UIDs were
renumbered starts over at its end. Nothing is marked or moved on the
server. Messages larger than the attachments allow are read as headers
only and refused in one line. An unknown sender gets no answer at all: a
refusal would be backscatter to whoever a forged From names. A message whose
From address no DKIM signature of its domain proves (:mod:`.mail_auth`) is
marked unproven, and the inbox refuses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import OrderedDict
from dataclasses import replace
from email.message import EmailMessage

import aioimaplib
import aiosmtplib

from butler.channels.base import Channel, ChannelError, Misconfigured, TooLarge
from butler.channels.mail_auth import Proof, prove, system_txt, txt_lookup
from butler.channels.mail_format import file_reply_of, inbound_of, parse, part_data, reply_of
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.config.channels import EmailSettings

#: Re-issue IDLE well before the 29 minutes RFC 2177 allows, and notice a dead link sooner.
IDLE_S = 300.0
#: How often a server without IDLE is asked for new mail.
POLL_S = 60.0
#: Messages read per batch, at most (the rest come with the next).
BATCH = 50
#: Raw messages kept for fetching their attachments without another connection.
KEEP = 20
_UID = re.compile(rb"UID (\d+)")
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


class EmailChannel(Channel):
    """One mailbox and its outgoing server."""

    kind = "email"
    shows_typing = False
    refuses_strangers = False
    settings: EmailSettings

    def __init__(self, settings: EmailSettings) -> None:
        super().__init__(settings)
        self._imap: aioimaplib.IMAP4 | None = None
        self._password = ""
        self._lost = asyncio.Event()
        self._validity = ""
        self._next = 1
        self._raw: OrderedDict[int, bytes] = OrderedDict()
        resolver = settings.resolver
        self._txt = txt_lookup(resolver) if resolver else system_txt()

    @property
    def max_reply_chars(self) -> int:
        return self.settings.max_reply_chars

    @property
    def max_message_bytes(self) -> int:
        """The largest email read whole: its attachments' allowance and a megabyte of text."""
        allowed = self.settings.max_attachment_bytes * max(self.settings.max_attachments, 1)
        return allowed * 4 // 3 + 1024 * 1024  # base64 makes files a third larger

    async def connect(self, secret: str, position: str | None) -> str | None:
        self._password = secret
        self._lost = asyncio.Event()
        imap = await self._login()
        self._imap = imap
        selected = await imap.select(self.settings.mailbox)
        if selected.result != "OK":
            raise Misconfigured(f"email: no mailbox {self.settings.mailbox!r} to read")
        validity = _number(selected.lines, b"UIDVALIDITY")
        uidnext = _number(selected.lines, b"UIDNEXT")
        if validity is None:
            raise ChannelError("email: the server gave no UIDVALIDITY")
        stored_validity, _, stored_next = (position or "").partition(":")
        self._validity = str(validity)
        if stored_validity == self._validity and stored_next.isdigit():
            self._next = int(stored_next)
            return None
        self._next = uidnext or await self._highest() + 1
        return f"{self._validity}:{self._next}"

    async def _login(self) -> aioimaplib.IMAP4:
        host, port = self.settings.imap_host, self.settings.imap_port
        lost = self._lost.set
        if self.settings.imap_security == "tls":
            imap = aioimaplib.IMAP4_SSL(host, port, timeout=30, conn_lost_cb=lambda _: lost())
        else:
            imap = aioimaplib.IMAP4(host, port, timeout=30, conn_lost_cb=lambda _: lost())
        try:
            await imap.wait_hello_from_server()
            login = await imap.login(
                self.settings.username or self.settings.address, self._password
            )
        except (OSError, TimeoutError, aioimaplib.AioImapException) as exc:
            _drop(imap)
            raise ChannelError(f"email: cannot reach {host}:{port}: {exc}") from None
        if login.result != "OK":
            _drop(imap)
            raise Misconfigured(f"email: {host} refused the login")
        return imap

    async def _highest(self) -> int:
        found = await self._command("uid_search", "ALL")
        uids = [int(u) for line in found.lines[:1] for u in line.split() if u.isdigit()]
        return max(uids, default=0)

    async def _command(self, name: str, *args: str) -> aioimaplib.Response:
        if self._imap is None or self._lost.is_set():
            raise ChannelError("email: the connection to the IMAP server was lost")
        response = await getattr(self._imap, name)(*args)
        if response.result != "OK":
            raise ChannelError(f"email: the IMAP server answered {response.result} to {name}")
        return response

    async def receive(self) -> Batch:
        batch = await self._read()
        if batch.messages or batch.position:
            return batch
        await self._idle()
        return await self._read()

    async def _idle(self) -> None:
        """Wait until the server says something changed, the link drops, or IDLE_S pass."""
        assert self._imap is not None
        if not self._imap.has_capability("IDLE"):  # a server without IDLE is asked each minute
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost.wait(), POLL_S)
            return
        idle = await self._imap.idle_start(timeout=IDLE_S)
        push = asyncio.ensure_future(self._imap.wait_server_push(timeout=IDLE_S + 30))
        lost = asyncio.ensure_future(self._lost.wait())
        try:
            await asyncio.wait({push, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            push.cancel()
            lost.cancel()
        if self._lost.is_set():
            raise ChannelError("email: the connection to the IMAP server was lost")
        self._imap.idle_done()
        await asyncio.wait_for(idle, 30)

    async def _read(self) -> Batch:
        """The messages from the cursor on, each whole unless it is too large."""
        found = await self._command("uid_search", f"UID {self._next}:*")
        uids = sorted(int(u) for line in found.lines[:1] for u in line.split() if u.isdigit())
        uids = [uid for uid in uids if uid >= self._next][:BATCH]
        if not uids:
            return Batch([])
        sizes = await self._sizes(uids)
        messages = []
        for uid in uids:
            whole = sizes.get(uid, 0) <= self.max_message_bytes
            raw = await self._fetch(uid, "BODY.PEEK[]" if whole else "BODY.PEEK[HEADER]")
            proof = await self._proof(raw)
            unproven = None if proof.proven else proof.reason
            message = inbound_of(
                raw, uid, self._validity, self.settings.address, unproven, proof.signature
            )
            if message is not None and not whole:
                message = _too_large(message, self.max_message_bytes)
            if message is not None:
                messages.append(message)
            self._keep(uid, raw if whole else b"")
        self._next = uids[-1] + 1
        return Batch(messages, f"{self._validity}:{self._next}")

    async def _proof(self, raw: bytes) -> Proof:
        """Whether ``raw``'s From address is proven (or need not be), and why not."""
        if self.settings.accept_unauthenticated:
            return Proof(True, "unauthenticated mail is accepted")
        try:
            return await asyncio.to_thread(prove, raw, self.settings.verified_by, self._txt)
        except Exception as exc:  # odd bytes never stop the mailbox: unproven, and read on
            return Proof(False, f"it could not be checked ({type(exc).__name__})")

    async def _sizes(self, uids: list[int]) -> dict[int, int]:
        found = await self._command("uid", "fetch", ",".join(map(str, uids)), "(RFC822.SIZE)")
        sizes = {}
        for line in found.lines:
            if isinstance(line, bytes | bytearray):
                uid, size = _UID.search(line), _SIZE.search(line)
                if uid and size:
                    sizes[int(uid[1])] = int(size[1])
        return sizes

    async def _fetch(self, uid: int, part: str) -> bytes:
        found = await self._command("uid", "fetch", str(uid), f"({part})")
        literals = [bytes(line) for line in found.lines if isinstance(line, bytearray)]
        if not literals:
            raise ChannelError(f"email: message {uid} could not be read")
        return literals[0]

    def _keep(self, uid: int, raw: bytes) -> None:
        self._raw[uid] = raw
        while len(self._raw) > KEEP:
            self._raw.popitem(last=False)

    async def send(self, to: Inbound, text: str) -> str:
        return await self._submit(reply_of(to, text, self.settings.address))

    async def send_file(
        self, to: Inbound, name: str, media_type: str, data: bytes, caption: str = ""
    ) -> str:
        """A reply in the thread with the file attached (an image too: mail has no other way)."""
        address = self.settings.address
        return await self._submit(file_reply_of(to, name, media_type, data, caption, address))

    async def _submit(self, reply: EmailMessage) -> str:
        s = self.settings
        try:
            await aiosmtplib.send(
                reply,
                hostname=s.smtp_host,
                port=s.smtp_port,
                username=s.username or s.address,
                password=self._password,
                use_tls=s.smtp_security == "tls",
                start_tls=s.smtp_security == "starttls",
                timeout=30,
            )
        except aiosmtplib.SMTPAuthenticationError:
            raise Misconfigured(f"email: {s.smtp_host} refused the login") from None
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise ChannelError(f"email: {s.smtp_host} did not take the reply: {exc}") from None
        return str(reply["Message-ID"])

    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        uid_text, _, number = attachment.ref.partition(":")
        uid = int(uid_text)
        raw = self._raw.get(uid) or await self._fetch_again(uid)
        data = part_data(parse(raw), int(number))
        if len(data) > limit:
            raise TooLarge(attachment.kind)
        return data

    async def _fetch_again(self, uid: int) -> bytes:
        """A message no longer kept (the daemon restarted): read on a connection of its own,
        since the reading one may be idling."""
        helper = EmailChannel(self.settings)
        helper._password = self._password
        helper._imap = await helper._login()
        try:
            await helper._command("select", self.settings.mailbox)
            return await helper._fetch(uid, "BODY.PEEK[]")
        finally:
            await helper.close()

    async def close(self) -> None:
        imap, self._imap = self._imap, None
        if imap is not None:
            with contextlib.suppress(Exception):
                if imap.has_pending_idle():
                    imap.idle_done()
                await asyncio.wait_for(imap.logout(), 5)


def _drop(imap: aioimaplib.IMAP4) -> None:
    """Close a connection that never got as far as a login."""
    transport = getattr(imap.protocol, "transport", None)
    if transport is not None:
        transport.close()


def _number(lines: list[bytes], name: bytes) -> int | None:
    for line in lines:
        match = re.search(rb"\[" + name + rb" (\d+)\]", line) if isinstance(line, bytes) else None
        if match:
            return int(match[1])
    return None


def _too_large(message: Inbound, limit: int) -> Inbound:
    refusal = f"the email is larger than the {limit // (1024 * 1024)} MiB one may be"
    big = AttachmentRef("email", "message/rfc822", None, "", refusal=refusal)
    return replace(message, attachments=(big,))
