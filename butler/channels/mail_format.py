"""Email as the inbox sees it: a message's sender, thread, words and files; a threaded reply.

Pure functions over RFC 5322 bytes. The sender is the From address, and
only that: a reply never goes to a Reply-To an attacker could name, and
whether the From address is proven (:mod:`.mail_auth`) travels with the
message; one with two From lines has no sender at all. Automatic mail
(auto-replies, lists, bulk) and the butler's own are not answered, so two
robots never write to each other for ever.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import hashlib
import html
import re
from email import errors
from email.message import EmailMessage, Message
from typing import Any

from butler.channels.message import AttachmentRef, Inbound

#: A message thread is named by its first message's id (what every reply's References keeps).
_MESSAGE_ID = re.compile(r"<[^<>\s]{1,250}>")
_QUOTE_HEAD = re.compile(r"^(On .{1,300} wrote:|-----\s*Original Message\s*-----)\s*$", re.M)
_SIGNATURE = re.compile(r"^-- ?$", re.M)
_TAG = re.compile(r"<[^>]{0,1000}>")


def parse(raw: bytes) -> EmailMessage:
    """The message, read leniently (a malformed header is a defect, not a crash)."""
    return email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[return-value]


def sender_of(message: Message) -> str | None:
    """The From address, lower-cased; None when there is not exactly one (one From line
    holding one address: a signature may cover one From line while a reader shows another).

    The address is the one the line's grammar gives (RFC 5322: between the angle
    brackets, when there are some), read by the standard library's header parser, and a
    line that parser finds invalid names nobody. A lenient reading would take
    ``alice@example.org <mallory@example.org>`` (or a group, or an encoded word) for
    Alice's while her provider, which lets Mallory send as himself, signed it as his.
    """
    lines = message.get_all("From", [])
    if len(lines) != 1:
        return None
    groups = getattr(lines[0], "groups", None)
    defects = getattr(lines[0], "defects", ())
    if groups is None or any(isinstance(d, errors.InvalidHeaderDefect) for d in defects):
        return None
    if len(groups) != 1 or groups[0].display_name is not None:
        return None
    found = groups[0].addresses
    if len(found) != 1 or not found[0].username or not found[0].domain:
        return None
    return found[0].addr_spec.lower()


def is_automatic(message: Message, own: str) -> bool:
    """Whether a robot wrote it (RFC 3834, lists, bulk), or the butler itself."""
    auto = str(message.get("Auto-Submitted", "no")).strip().lower()
    precedence = str(message.get("Precedence", "")).strip().lower()
    return (
        auto != "no"
        or precedence in ("bulk", "junk", "list", "auto_reply")
        or message.get("List-Id") is not None
        or sender_of(message) == own
    )


def thread_of(message: Message) -> tuple[str, str | None, list[str]]:
    """The thread's root id, this message's id, and the References a reply carries on."""
    own = _MESSAGE_ID.findall(str(message.get("Message-ID", "")))
    references = _MESSAGE_ID.findall(str(message.get("References", "")))[-50:]
    replied = _MESSAGE_ID.findall(str(message.get("In-Reply-To", "")))
    root = (references or replied or own or [""])[0]
    return root, own[0] if own else None, references or replied


def words_of(message: EmailMessage) -> str:
    """What the person wrote: the plain text part (or the HTML one as text), without the
    quoted message it answers or a signature."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        text = part.get_content()
    except (LookupError, ValueError, AssertionError):
        return ""
    if part.get_content_subtype() == "html":
        text = html.unescape(_TAG.sub(" ", re.sub(r"(?i)<br\s*/?>|</p>", "\n", text)))
    return without_quotes(str(text))


def without_quotes(text: str) -> str:
    """``text`` without the quoted earlier message and the signature a mail client adds."""
    head = _QUOTE_HEAD.search(text)
    if head:
        text = text[: head.start()]
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and (not lines[-1].strip() or lines[-1].startswith(">")):
        lines.pop()
    text = "\n".join(lines)
    signature = _SIGNATURE.search(text)
    return (text[: signature.start()] if signature else text).strip()


def files_of(message: EmailMessage, uid: int) -> tuple[AttachmentRef, ...]:
    """Every attached part, as a reference the channel fetches again by UID and part number."""
    found = []
    for number, part in enumerate(message.iter_attachments()):
        payload = part.get_payload(decode=True)
        size = len(payload) if isinstance(payload, bytes) else None
        media = part.get_content_type()
        kind = media.split("/")[0] if media.startswith(("image/", "audio/")) else "document"
        name = part.get_filename()
        found.append(AttachmentRef(kind, media, size, f"{uid}:{number}", name))
    return tuple(found)


def part_data(message: EmailMessage, number: int) -> bytes:
    """The decoded bytes of the ``number``-th attached part."""
    for index, part in enumerate(message.iter_attachments()):
        if index == number:
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else b""
    return b""


def inbound_of(
    raw: bytes, uid: int, validity: str, own: str, unproven: str | None, signature: str = ""
) -> Inbound | None:
    """A person's email as an inbound message; None for automatic mail or no sender.

    ``unproven`` says why its From address is not proven (None: it is, or the owner
    takes unauthenticated mail); ``signature`` is the digest of the DKIM signature that
    proved it, by which the inbox knows the same message sent again.
    """
    message = parse(raw)
    sender = sender_of(message)
    if sender is None or is_automatic(message, own):
        return None
    root, own_id, references = thread_of(message)
    subject = str(message.get("Subject", ""))[:300]
    text = words_of(message) or subject
    name = email.utils.parseaddr(str(message.get("From", "")))[0] or None
    return Inbound(
        channel="email",
        external_id=f"{validity}:{uid}",
        chat=sender,
        thread=root or f"<{validity}.{uid}@butler>",
        sender=sender,
        display_name=name,
        text=text,
        attachments=files_of(message, uid),
        reply={
            "message_id": own_id,
            "references": references,
            "subject": subject,
            **({"signature": signature} if signature else {}),
        },
        unproven=unproven,
        addressed=True,  # mail to the butler's own address is for it
    )


def reply_of(to: Inbound, text: str, address: str) -> EmailMessage:
    """The answer to ``to``: from the butler's address to the sender's, in the same thread."""
    reply = EmailMessage()
    subject = str(to.reply.get("subject") or "").strip()
    reply["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}".strip()
    reply["From"] = address
    reply["To"] = to.chat
    digest = hashlib.sha256(f"{to.external_id}\0{text}".encode()).hexdigest()[:32]
    reply["Message-ID"] = f"<{digest}@{address.rsplit('@', 1)[-1]}>"
    replied: Any = to.reply.get("message_id")
    if replied:
        reply["In-Reply-To"] = replied
        reply["References"] = " ".join([*to.reply.get("references", []), replied][-50:])
    reply["Auto-Submitted"] = "auto-replied"  # RFC 3834: other robots leave it be
    reply["Date"] = email.utils.formatdate(localtime=False)
    reply.set_content(text)
    return reply


def file_reply_of(
    to: Inbound, name: str, media_type: str, data: bytes, caption: str, address: str
) -> EmailMessage:
    """A reply to ``to`` in its thread carrying a file: the caption (or the file's name) as
    its text, the file as a MIME attachment."""
    reply = reply_of(to, caption or f"The file {name} is attached.", address)
    digest = hashlib.sha256(f"{to.external_id}\0{name}\0".encode() + data).hexdigest()[:32]
    reply.replace_header("Message-ID", f"<{digest}@{address.rsplit('@', 1)[-1]}>")
    maintype, _, subtype = media_type.partition("/")
    reply.add_attachment(data, maintype=maintype, subtype=subtype or "octet-stream", filename=name)
    return reply
