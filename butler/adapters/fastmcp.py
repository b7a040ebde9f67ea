"""FastMCP, where its public API costs a start or a call too much.

Relies on (checked against fastmcp 4.1.6, pinned in pyproject.toml; tests/adapters/
test_fastmcp.py fails when any of it changes):

- a :class:`~fastmcp.tools.function_tool.FunctionTool` made by ``from_function``
  depends on its function only through its code, name, docstring, defaults and
  annotations, so a copy holding another function of the same shape
  (``model_copy(update={"fn": ...})``) is the tool FastMCP would have parsed from it;
- ``FastMCP._mcp_server`` is the MCP SDK's low-level server, whose
  ``get_tool_input_schema`` (a constructor argument FastMCP does not pass on) the
  SDK asks for a tool's input schema when it checks a call's ``Mcp-Param-*`` headers.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any, get_args

from fastmcp import FastMCP
from fastmcp.server.dependencies import transform_context_annotations
from fastmcp.tools.function_tool import FunctionTool

__all__ = ["ButlerMCP", "answer_input_schemas"]


class ButlerMCP(FastMCP):
    """FastMCP whose tools are described by their docstrings as written, and parsed once
    per process however many butlers register them.

    FastMCP hands each tool's docstring to griffe to split out Google, NumPy or Sphinx
    sections (``Args:``, ``Returns:``); importing griffe was ~2 % of a start.
    Butler's tool docstrings have no such sections (their parameters are described by
    their annotated types), so griffe would return them whole: they are given as the
    description, and the parser is never asked.

    Each butler's tools are closures over that butler, made by the same code:
    :func:`_parsed` builds a tool's schemas from the first and hands the rest a copy
    holding their own function. Parsing was ~90 % of building a butler's server
    (~90 ms of CPU each), so a roster of 100 butlers spent most of its start on it.
    """

    def tool(self, name_or_fn: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        if _shareable(name_or_fn) and not kwargs:
            parsed = _parsed(name_or_fn)
            if "__signature__" in vars(parsed.fn):
                # FastMCP gave the parsed function a signature of its own (a Context
                # parameter made a dependency it injects): this copy needs the same.
                transform_context_annotations(name_or_fn)
            self.add_tool(parsed.model_copy(update={"fn": name_or_fn}))
            return name_or_fn
        if inspect.isroutine(name_or_fn) and name_or_fn.__doc__ and "description" not in kwargs:
            kwargs["description"] = inspect.getdoc(name_or_fn)
            name_or_fn.__doc__ = None
        return super().tool(name_or_fn, **kwargs)


#: Tools parsed by this process, by what their schemas are made of (see :func:`_shape`).
_PARSED: dict[tuple[Any, ...], FunctionTool] = {}


def _parsed(fn: Any) -> FunctionTool:
    """The tool FastMCP makes of ``fn``, parsed only for the first function of its shape."""
    shape = _shape(fn)
    tool = _PARSED.get(shape)
    if tool is None:
        description = inspect.getdoc(fn)
        fn.__doc__ = None  # given as the description: the docstring parser is never asked
        tool = _PARSED[shape] = FunctionTool.from_function(fn, description=description)
    return tool


def _shape(fn: Any) -> tuple[Any, ...]:
    """What a tool's name, description and schemas are made of: its code and name, and
    the values its definition evaluated (defaults, annotations), which a closure may make
    differ. Compared by ``repr``: pydantic's ``Field(le=...)`` has no equality of its
    own, and its ``repr`` shows every constraint; an object without a value of its own
    shows its address, unique while the first tool of that shape keeps it alive."""
    made = repr((fn.__defaults__, fn.__kwdefaults__, fn.__annotations__))
    return (fn.__code__, fn.__qualname__, made)


def _shareable(fn: Any) -> bool:
    """Whether ``fn``'s parsing may be shared: a plain function (not a decorator's
    wrapper, nothing set on it) whose annotations name only classes found again by their
    module and name. A class made inside the registering function (an Enum of a butler's
    choices, a model) has one ``repr`` in every butler, whatever each one holds."""
    if not inspect.isfunction(fn) or vars(fn):
        return False
    return all(_named(hint) for hint in fn.__annotations__.values())


def _named(hint: Any) -> bool:
    if hint is type(None):
        return True
    if isinstance(hint, type):
        found: Any = sys.modules.get(hint.__module__)
        for part in hint.__qualname__.split("."):
            found = getattr(found, part, None)
        return found is hint
    return all(_named(arg) for arg in get_args(hint))


def answer_input_schemas(mcp: FastMCP, schemas: Mapping[str, Mapping[str, Any]]) -> None:
    """Have the MCP SDK take a tool's input schema from ``schemas`` (by tool name).

    The SDK checks a call's ``Mcp-Param-*`` headers against the tool's input schema;
    with no lookup it runs a whole ``tools/list`` through the server (middleware and
    all) for every ``tools/call``, a sixth of the daemon's CPU per trigger. FastMCP
    builds the SDK's server without one, so it is set on that server here.
    """
    lookup: Callable[[str], Mapping[str, Any] | None] = schemas.get
    mcp._mcp_server.get_tool_input_schema = lookup
