"""Voice notes and audio in words: an OpenAI-compatible speech-to-text API, before the session.

The owner names the API (``transcribe_url``: OpenAI's, or a local server
speaking the same ``POST /audio/transcriptions``) and its key by credential
name. The audio goes as the channel fetched it (bounded, checked against its
type); what comes back is the person's words, bounded, given to the session
with the file and kept in the session's metadata. A failure is one line on
the session, never the message's end: the session still has the audio.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from butler.channels.base import ChannelError, Need
from butler.channels.message import Inbound
from butler.channels.text import one_line
from butler.config.channels import ChannelSettings
from butler.spawner.workspace import SessionFile

#: Longest a transcription may take.
TIMEOUT_S = 120.0
#: Longest transcript kept, in characters (a voice note of many minutes).
MAX_CHARS = 20_000


@dataclass(frozen=True)
class Transcript:
    """What one audio file said, or why it could not be read."""

    name: str
    text: str | None
    error: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"name": self.name, "text": self.text, "error": self.error}


async def transcribe(
    url: str, model: str, key: str, file: SessionFile, media_type: str
) -> Transcript:
    """``file`` in words, through the API at ``url``."""
    files = {"file": (file.name, file.data, media_type)}
    data = {"model": model, "response_format": "json"}
    headers = {"Authorization": f"Bearer {key}"}
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
            answer = await client.post(
                f"{url}/audio/transcriptions", files=files, data=data, headers=headers
            )
    except httpx.HTTPError as exc:
        return Transcript(
            file.name, None, f"the transcription API was not reached: {type(exc).__name__}"
        )
    if answer.status_code != 200:
        reason = (
            one_line(answer.text, 200).replace(key, "***") if key else one_line(answer.text, 200)
        )
        return Transcript(
            file.name, None, f"the transcription API answered {answer.status_code}: {reason}"
        )
    try:
        text = answer.json()["text"]
    except (ValueError, KeyError, TypeError):
        return Transcript(file.name, None, "the transcription API's answer held no text")
    if not isinstance(text, str):
        return Transcript(file.name, None, "the transcription API's answer held no text")
    return Transcript(file.name, text.strip()[:MAX_CHARS])


async def transcribed(
    settings: ChannelSettings,
    need: Need | None,
    message: Inbound,
    files: tuple[SessionFile, ...],
) -> tuple[Transcript, ...]:
    """What each audio attachment of ``message`` said, when the channel names an API."""
    audio = [
        (ref, file)
        for ref, file in zip(message.attachments, files, strict=False)
        if ref.media_type.startswith("audio/")
    ]
    if not settings.transcribe_url or not audio or need is None:
        return ()
    try:
        key = await need(settings.transcribe_credential)
    except ChannelError as exc:  # the key is not set: said on the session, not fatal
        return tuple(Transcript(file.name, None, str(exc)) for _, file in audio)
    url, model = settings.transcribe_url, settings.transcribe_model
    return tuple([await transcribe(url, model, key, f, ref.media_type) for ref, f in audio])


def with_transcripts(prompt: str, transcripts: tuple[Transcript, ...]) -> str:
    """The prompt, with what each voice note said after it (the person's words too)."""
    parts = [prompt] if prompt else []
    for t in transcripts:
        if t.text is not None:
            parts.append(f"Transcript of the voice note {t.name}:\n{t.text}")
        else:
            parts.append(f"The voice note {t.name} could not be transcribed ({t.error}).")
    return "\n\n".join(parts)
