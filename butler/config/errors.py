"""Pydantic validation errors as the one line a person needs: in TOML terms.

"butler.runtime.max_turns: expected an integer, found 'many' (a string)",
naming the file, or the environment variable or option a value came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

_TOML_TYPES: dict[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    dict: "a table",
}

_EXPECTED: dict[str, str] = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
    "list_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}

_BOUNDS: dict[str, str] = {
    "greater_than_equal": "at least {ge}",
    "greater_than": "more than {gt}",
    "less_than_equal": "at most {le}",
    "less_than": "less than {lt}",
}


def _where(loc: tuple[Any, ...]) -> str:
    """Render a pydantic error location as the TOML key a person wrote."""
    key = ""
    for part in loc:
        if isinstance(part, int):
            key += f"[{part}]"
        else:
            key += ("." if key else "") + ("schema" if part == "schema_" else str(part))
    return key


def _found(value: Any) -> str:
    kind = next((name for t, name in _TOML_TYPES.items() if isinstance(value, t)), None)
    shown = str(value).lower() if isinstance(value, bool) else repr(value)
    if len(shown) > 80:  # a 100 kB argument still makes one readable line
        shown = f"{shown[:48]}...{shown[-12:]} ({len(shown)} characters)"
    return f"{shown} ({kind})" if kind else shown


def _table_keys(loc: tuple[Any, ...], root: type[BaseModel]) -> list[str]:
    """The keys a table accepts, for the table at ``loc`` below ``root``."""
    model: Any = root
    mapping = False
    for part in loc:
        if isinstance(part, int) or mapping:
            mapping = False
            continue
        field = model.model_fields.get("schema_" if part == "schema" else part)
        if field is None:
            return []
        inner = field.annotation
        mapping = getattr(inner, "__origin__", None) is dict
        args = getattr(inner, "__args__", ())
        inner = args[-1] if args else inner
        model = inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None
        if model is None:
            return []
    return [f.alias or name for name, f in model.model_fields.items()]


def describe(error: Any, root: type[BaseModel] | None = None) -> str:
    """What was wrong and what is expected, for one pydantic error (without the where)."""
    kind = error["type"]
    found = error.get("input")
    if kind == "extra_forbidden":
        keys = _table_keys(error["loc"][:-1], root) if root else []
        expected = f"; expected one of: {', '.join(keys)}" if keys else ""
        return f"unknown key '{error['loc'][-1]}'{expected}"
    if kind == "missing":
        return "missing required key"
    msg = str(error["msg"]).removeprefix("Value error, ")
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, found {_found(found)}"
    if kind in _BOUNDS:
        return f"expected {_BOUNDS[kind].format(**error['ctx'])}, found {_found(found)}"
    if kind == "literal_error":
        return f"expected {msg.removeprefix('Input should be ')}, found {_found(found)}"
    if "found" in msg:
        return msg
    return f"{msg[:1].lower()}{msg[1:]}, found {_found(found)}"


def validation_error_line(
    exc: ValidationError,
    path: Path,
    sources: dict[tuple[str, ...], str],
    root: type[BaseModel],
) -> str:
    """One line for the first error of ``exc``, blaming the file or the override it came from."""
    errors = exc.errors()
    first = errors[0]
    loc = tuple(first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    source = next((s for key, s in sources.items() if loc[: len(key)] == key), None)
    if first["type"] == "extra_forbidden":
        table = _where(("butler", *loc[:-1]))
        return f"{path}: [{table}]: {describe(first, root)}{more}"
    where = f"{source} (butler.{_where(loc)})" if source else f"{path}: butler.{_where(loc)}"
    return f"{where}: {describe(first, root)}{more}"
