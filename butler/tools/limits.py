"""Bounds on every tool argument, checked where the call arrives.

Each argument type here carries its limits as pydantic constraints, so the
tool's JSON schema shows them to the caller, and a call outside them is
refused before the tool runs. :class:`ArgumentErrors` turns pydantic's
multi-line report into one line naming the tool, the argument, the value
(abbreviated) and what is allowed.

JSON limits: a state value is at most ``butler.store.state.MAX_VALUE_DEPTH`` (32)
levels deep and ``MAX_VALUE_BYTES`` (1 MiB) bytes; session metadata at most
:data:`MAX_METADATA_DEPTH` levels and :data:`MAX_METADATA_BYTES` bytes; none
may hold NUL, NaN or Infinity.
"""

import functools
from typing import Annotated, Any, Literal

from fastmcp.exceptions import ToolError
from fastmcp.exceptions import ValidationError as ArgumentsError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from pydantic import AfterValidator, Field, JsonValue
from pydantic import ValidationError as PydanticValidationError

from butler.config.errors import describe
from butler.store.sessions import STATUSES
from butler.store.state import MAX_KEY_CHARS, MAX_VALUE_BYTES, MAX_VALUE_DEPTH, value_problem
from butler.store.text import json_problem

#: Most turns a caller may ask a session for.
MAX_TURNS = 1000
#: Most rows ``session_list`` returns.
MAX_LIST = 1000
#: Session metadata: deepest nesting and largest size in bytes of JSON.
MAX_METADATA_DEPTH = 16
MAX_METADATA_BYTES = 64 * 1024
#: Longest short name-like argument (trigger source, prefix, dedupe key).
MAX_NAME_CHARS = 512


def _no_nul(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        at = value.index("\x00")
        raise ValueError(f"expected text without NUL characters, found one at character {at}")
    return value


@functools.cache
def _bytes_at_most(max_bytes: int, blank_ok: bool) -> AfterValidator:
    # One validator per limit: butlers of one process with the same limit then declare
    # the same types, and share the parsing of the tools that use them (butler.server).
    def check(value: str | None) -> str | None:
        if value is None:
            return None
        if not blank_ok and not value.strip():
            raise ValueError(f"expected non-blank text, found {value[:20]!r}")
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise ValueError(
                f"expected at most {max_bytes} bytes (max_prompt_bytes), found {size} bytes"
            )
        return value

    return AfterValidator(check)


def prompt_text(max_bytes: int) -> Any:
    """A required prompt: not blank, no NUL, at most ``max_bytes`` bytes of UTF-8."""
    return Annotated[
        str,
        Field(min_length=1, max_length=max_bytes),
        AfterValidator(_no_nul),
        _bytes_at_most(max_bytes, blank_ok=False),
    ]


def optional_text(max_bytes: int) -> Any:
    """Optional free text (a prompt's context): no NUL, at most ``max_bytes`` bytes."""
    return Annotated[
        str | None,
        Field(max_length=max_bytes),
        AfterValidator(_no_nul),
        _bytes_at_most(max_bytes, blank_ok=True),
    ]


def timeout_seconds(max_s: float) -> Any:
    """A per-call time limit: finite, above 0, at most the butler's own ``timeout_s``."""
    return Annotated[float | None, Field(gt=0, le=max_s, allow_inf_nan=False)]


def _json_limits(max_depth: int, max_bytes: int) -> AfterValidator:
    def check(value: Any) -> Any:
        problem = None if value is None else json_problem(value, max_depth, max_bytes)
        if problem:
            raise ValueError(
                f"expected JSON at most {max_depth} levels deep and {max_bytes} bytes without "
                f"NUL, NaN or Infinity, found a value that {problem}"
            )
        return value

    return AfterValidator(check)


def _state_value(value: Any) -> Any:
    problem = None if value is None else value_problem(value)
    if problem:
        raise ValueError(
            f"expected JSON at most {MAX_VALUE_DEPTH} levels deep and {MAX_VALUE_BYTES} bytes "
            f"without NUL, NaN or Infinity, found a value that {problem}"
        )
    return value


MaxTurns = Annotated[int | None, Field(ge=1, le=MAX_TURNS)]
StateKey = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS), AfterValidator(_no_nul)]
StatePrefix = Annotated[str, Field(max_length=MAX_KEY_CHARS), AfterValidator(_no_nul)]
StateValue = Annotated[JsonValue, AfterValidator(_state_value)]
Name = Annotated[
    str | None, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(_no_nul)
]
#: A file-system path argument: no NUL (the OS cannot take one), at most PATH_MAX.
PathText = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_no_nul)]
#: JSON arguments to a protocol: as bounded as session metadata.
ProtocolArgs = Annotated[
    dict[str, JsonValue] | None, _json_limits(MAX_METADATA_DEPTH, MAX_METADATA_BYTES)
]
Metadata = Annotated[
    dict[str, JsonValue] | None, _json_limits(MAX_METADATA_DEPTH, MAX_METADATA_BYTES)
]
IfVersion = Annotated[int | None, Field(ge=0)]
ListLimit = Annotated[int, Field(ge=1, le=MAX_LIST)]
SessionStatus = Literal[STATUSES] | None  # type: ignore[valid-type]


def argument_error_line(tool: str, exc: PydanticValidationError) -> str:
    """One line for the first bad argument of a call: tool, argument, value, what is allowed."""
    errors = exc.errors()
    first = errors[0]
    name = ".".join(str(part) for part in first["loc"]) or "arguments"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{tool}: argument {name}: {describe(first)}{more}"


class ArgumentErrors(Middleware):
    """Refuse a call with bad arguments in one line instead of pydantic's report."""

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except ArgumentsError as exc:
            cause = exc.__cause__
            if isinstance(cause, PydanticValidationError):
                raise ToolError(argument_error_line(context.message.name, cause)) from None
            raise
