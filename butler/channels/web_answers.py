"""The web chat's answers, kept in their conversations: each as its turn ends, and after a
stop, the ones a stopped daemon left unrecorded.

An answer is recorded once whoever records it (its id is its message's, with
``/answer``): at the end of its turn, or at the next start from the session's
row (which the spawner completes however the run ended), or, for a message
whose session never started, as a line saying it was cut short.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from butler.channels.text import one_line
from butler.channels.web_message import CHANNEL, CHAT
from butler.spawner.result import SpawnerResult
from butler.store.conversations import ConversationStore, MessageRecord
from butler.store.sessions import SessionStore

log = logging.getLogger(__name__)

INTERRUPTED = "the butler stopped while answering this; please send it again"
#: A session's row in one of these states holds its answer.
FINAL = ("succeeded", "failed", "cancelled", "ended")


def answer_of(result: SpawnerResult) -> tuple[str, str]:
    """What the person reads of ``result``, and the status of the message it answers."""
    if result.success:
        return result.output.strip() or "(no answer)", "answered"
    return f"could not answer: {one_line(result.error or 'unknown error', 200)}", "failed"


class WebAnswers:
    """Records the web chat's answers of one butler."""

    def __init__(self, butler: str, store: ConversationStore, sessions: SessionStore) -> None:
        self.butler = butler
        self.store = store
        self.sessions = sessions
        self._recovering = asyncio.Lock()
        self._recovered = False

    async def record(
        self,
        row_id: int,
        conversation: tuple[uuid.UUID, str],
        message_id: str,
        result: SpawnerResult,
    ) -> str:
        """Keep the answer to message ``row_id`` (or why there is none) in ``conversation``
        (its id and thread); the answer.

        A database that fails here loses nothing: the session's row has it, and the
        next start records it from there.
        """
        answer, status = answer_of(result)
        conversation_id, thread = conversation
        try:
            await self.store.record(
                MessageRecord(
                    channel=CHANNEL,
                    direction="out",
                    external_id=f"{message_id}/answer",
                    chat=CHAT,
                    thread=thread,
                    sender=self.butler,
                    body=answer,
                    conversation_id=conversation_id,
                    butler=self.butler,
                    session_id=result.session_id,
                    status="sent",
                )
            )
            await self.store.mark(row_id, status, session_id=result.session_id)
            if result.session_id:
                await self.store.touch(conversation_id, result.session_id)
        except Exception:
            log.exception("web chat answer not recorded", extra={"butler": self.butler})
        return answer

    async def recover(self) -> None:
        """Once, before the web chat's first use: answer what a stopped daemon left open."""
        if self._recovered:
            return
        async with self._recovering:
            if self._recovered:
                return
            for row in await self.store.open_messages(CHANNEL):
                await self._recover(row)
            self._recovered = True

    async def _recover(self, row: dict[str, Any]) -> None:
        session = await self.sessions.get(row["session_id"]) if row["session_id"] else None
        if session is not None and session["status"] in FINAL:
            result = SpawnerResult(
                output=session.get("output") or "",
                success=session["status"] == "succeeded",
                error=session.get("error"),
                session_id=str(session["id"]),
            )
        else:
            sid = str(row["session_id"]) if row["session_id"] else None
            result = SpawnerResult(success=False, error=INTERRUPTED, session_id=sid)
        if row["conversation_id"] is None:
            await self.store.mark(row["id"], "failed")
            return
        at = (row["conversation_id"], row["thread"])
        await self.record(row["id"], at, row["external_id"], result)
