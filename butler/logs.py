"""Logging: coloured lines for a person at a terminal, one JSON object per line otherwise.

Every record goes through one handler on the root logger: butler's own,
uvicorn's and FastMCP's alike, each carrying the name of the butler it
concerns. Only names ever reach a log line, never credential values:
nothing in butler logs an environment or a DSN password, and the handler
drops what the libraries would write of a request's secrets (its query
string, its credential headers) before a line is made.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from contextvars import ContextVar
from typing import Any, Literal

from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape

#: The butler whose work the current task is doing (each server's task sets it).
current_butler: ContextVar[str | None] = ContextVar("current_butler", default=None)

LogFormat = Literal["auto", "text", "json"]
LOG_FORMATS = ("auto", "text", "json")

_STANDARD = set(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}
#: Libraries that install their own handlers; their records go to the root's instead.
_ROUTED = ("uvicorn", "uvicorn.error", "uvicorn.access", "fastmcp", "mcp", "py.warnings")
#: The chat libraries' debug lines hold what must not be logged: a bot token in a URL, an
#: IMAP LOGIN with its password.
_QUIET = (
    *("mcp", "fastmcp", "httpx", "httpx2", "sse_starlette", "docket"),
    *("telegram", "nio", "aioimaplib", "aiosmtplib", "slack_sdk", "hikari"),
)


#: A request target's query string: the dashboard's login link, a terminal handshake's
#: ``?token=`` from a script. uvicorn's WebSocket lines and the websockets library's debug
#: lines write the whole target; the path is kept, what follows ``?`` never is.
_QUERY = re.compile(r"((?:[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/?#\"']*)?/[^\s?#\"']*)\?[^\s#\"']+")
#: A header line the websockets library writes at debug (``< authorization: Bearer ...``).
_HEADER = re.compile(
    r"^([<>] [\w-]*(?:auth|cookie|token|key|secret|password)[\w-]*:).*$", re.I | re.M
)
_BEARER = re.compile(r"\b(bearer)\s+\S+", re.I)
REDACTED = "[redacted]"


def scrub(text: str) -> str:
    """``text`` without query strings, credential headers' values or bearer tokens."""
    if "?" in text:
        text = _QUERY.sub(r"\1", text)
    text = _HEADER.sub(rf"\1 {REDACTED}", text)
    return _BEARER.sub(rf"\1 {REDACTED}", text)


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra`` fields a record was logged with."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class ButlerName(logging.Filter):
    """Put the current butler's name on a record that does not carry one."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "butler", None) is None:
            name = current_butler.get()
            if name is not None:
                record.butler = name
        return True


class NoSecrets(logging.Filter):
    """Scrub a record's message and fields (:func:`scrub`) before any line is made of it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: logging reports it as it formats
            return True
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        for key, value in extras(record).items():
            if isinstance(value, str):
                setattr(record, key, scrub(value))
        return True


class JsonFormatter(logging.Formatter):
    """Render a record as one JSON line with its ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        data.update(extras(record))
        if record.exc_info:
            data["exception"] = scrub(self.formatException(record.exc_info))
        return json.dumps(data, default=str)


class TextFormatter(logging.Formatter):
    """``butler: message key=value ...`` in rich markup (time and level come from rich)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = extras(record)
        name = fields.pop("butler", None)
        line = escape(record.getMessage())
        if name:
            line = f"[bold cyan]{escape(str(name))}[/]: {line}"
        if fields:
            pairs = " ".join(f"{k}={v}" for k, v in fields.items())
            line += f" [dim]{escape(pairs)}[/]"
        if record.exc_info:
            line += "\n" + escape(scrub(self.formatException(record.exc_info)))
        return line


def handler_for(log_format: LogFormat, stream: Any = None) -> logging.Handler:
    """The one handler: rich text on a terminal (or ``text``), JSON lines otherwise."""
    stream = stream or sys.stderr
    if log_format == "text" or (log_format == "auto" and stream.isatty()):
        handler: logging.Handler = RichHandler(
            console=Console(file=stream),
            show_path=False,
            markup=True,
            log_time_format="%H:%M:%S",
        )
        handler.setFormatter(TextFormatter())
    else:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(JsonFormatter())
    handler.addFilter(ButlerName())
    handler.addFilter(NoSecrets())
    return handler


def setup_logging(level: str = "INFO", log_format: LogFormat = "auto") -> None:
    """Send every log record, uvicorn's and FastMCP's included, through one handler.

    Call it after FastMCP is imported: its import installs a handler of its
    own, which is removed here.
    """
    root = logging.getLogger()
    root.handlers[:] = [handler_for(log_format)]
    root.setLevel(level.upper())
    logging.captureWarnings(True)
    for name in _ROUTED:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
        logger.setLevel(logging.NOTSET)  # --log-level decides, not a library's default
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    quiet_libraries()


def quiet_libraries() -> None:
    """Libraries log warnings and errors only, whatever ``--log-level`` says."""
    for noisy in _QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)
