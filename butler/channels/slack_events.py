"""What a Slack event says: a person's message in an Events API payload, and its files.

Pure reading of the payload, the same for an envelope from the socket and a
message read back from a chat's history (:mod:`.slack` puts both in the same
terms). In a direct message the conversation is the chat; in a channel the
bot answers under the message, so its thread is the conversation.
"""

from __future__ import annotations

import html
import re
from typing import Any

from butler.channels.message import AttachmentRef, Inbound, kind_of

#: Message subtypes that are a person's words; edits, joins and bots' posts are not.
SAID = {None, "file_share", "thread_broadcast"}


def inbound_of(payload: dict[str, Any], me: str) -> Inbound | None:
    """A person's message in an Events API payload; None for anything else.

    ``me`` is the bot's user id: its own posts are never read, a mention of it
    is taken off the text, and a reply in a thread it started addresses it.
    """
    event = payload.get("event")
    if not isinstance(event, dict) or event.get("type") not in ("message", "app_mention"):
        return None
    user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
    if event.get("subtype") not in SAID or event.get("bot_id") or not user or user == me:
        return None
    if not isinstance(channel, str) or not isinstance(ts, str) or not isinstance(user, str):
        return None
    direct = event.get("channel_type") == "im"
    raw = event.get("text") if isinstance(event.get("text"), str) else ""
    mention = f"<@{me}>"
    addressed = (
        direct
        or event.get("type") == "app_mention"
        or mention in raw
        or event.get("parent_user_id") == me
    )
    text = html.unescape(re.sub(rf"\s*{re.escape(mention)}\s*", " ", raw).strip())
    in_thread = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else ""
    # In a channel the bot answers under the message, so its thread is the conversation.
    thread = in_thread if direct else (in_thread or ts)
    return Inbound(
        channel="slack",
        external_id=f"{channel}:{ts}",
        chat=channel,
        thread="" if direct else thread,
        sender=user,
        display_name=None,
        text=text,
        attachments=attachments_of(event),
        reply={"ts": ts, "thread_ts": thread},
        group=not direct,
        addressed=addressed,
    )


def attachments_of(event: dict[str, Any]) -> tuple[AttachmentRef, ...]:
    """The files a message shared; one Slack did not give the bot is refused by name."""
    found = []
    for item in event.get("files") or []:
        if not isinstance(item, dict):
            continue
        media = str(item.get("mimetype") or "application/octet-stream")
        kind = kind_of(media)
        size = item.get("size") if isinstance(item.get("size"), int) else None
        name = item.get("name") if isinstance(item.get("name"), str) else None
        refusal = None
        if item.get("mode") in ("tombstone", "hidden_by_limit") or not item.get("id"):
            refusal = "Slack did not give the bot this file (deleted, or beyond the plan's limit)"
        found.append(AttachmentRef(kind, media, size, str(item.get("id") or ""), name, refusal))
    return tuple(found)
