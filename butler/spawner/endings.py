"""How an interactive session ended, as its row records it.

Its terminal ran the launcher, which wrote how the runtime ended (an exit
record); its CLI wrote what it used into its own files (a transcript). Both
become the row's outcome here: a status, an error, tokens, cost and model.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from typing import Any

from butler.runtimes.base import Transcript
from butler.runtimes.jsonl import status_text
from butler.store.sessions import SessionOutcome

#: How a runtime ended: ``{"status": code, "signal": number}``, one of them None.
Exit = dict[str, int | None]
#: Signals that mean someone stopped the runtime, rather than that it broke.
STOP_SIGNALS = {signal.SIGHUP, signal.SIGINT, signal.SIGTERM}
_SIGNALS = {int(s) for s in signal.Signals}


def end_of(ended: Exit | None) -> tuple[str, str | None]:
    """A finished session's status and error, from how its runtime's process ended.

    Without an exit record the runtime's end was not seen (its terminal was
    closed, or the launcher itself killed): ``ended``, distinct from a stop
    someone asked for.
    """
    if ended is None:
        return "ended", "its runtime ended without an exit record (tmux session closed)"
    code, sig = ended.get("status"), ended.get("signal")
    if sig is not None:
        name = signal.Signals(sig).name if sig in _SIGNALS else str(sig)
        return ("cancelled" if sig in STOP_SIGNALS else "failed"), f"runtime ended by signal {name}"
    if code == 0:
        return "succeeded", None
    return "failed", f"runtime exited with {status_text(code)}"


def usage_fields(transcript: Transcript | None) -> dict[str, Any]:
    """The session outcome's usage fields from a transcript (none when there is none)."""
    if transcript is None:
        return {}
    usage = transcript.usage
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cost_usd": transcript.cost_usd,
        "runtime_session_id": transcript.session_id,
        "model": transcript.model,
    }


def elapsed_ms(row: dict[str, Any]) -> int:
    """Milliseconds since the row's session started (or was created)."""
    since = row.get("started_at") or row.get("created_at")
    if not since:
        return 0
    started = datetime.fromisoformat(since)
    return max(0, int((datetime.now(UTC) - started).total_seconds() * 1000))


def interactive_outcome(
    row: dict[str, Any],
    status: str,
    error: str | None,
    output: str,
    transcript: Transcript | None,
) -> SessionOutcome:
    """The outcome of the session ``row`` records, ended with ``status`` and ``error``."""
    return SessionOutcome(
        status=status,
        success=status == "succeeded",
        output=output,
        error=error,
        tool_calls=[],  # the lifecycle fills them in, from what the server saw
        duration_ms=elapsed_ms(row),
        **usage_fields(transcript),
    )


def now_iso() -> str:
    """Now, as the row's metadata records moments (``ended_at``, ``adopted_at``)."""
    return datetime.now(UTC).isoformat()
