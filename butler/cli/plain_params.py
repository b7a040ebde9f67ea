"""Options and arguments of plain types read without pydantic.

Typer (0.2x) coerces every parameter through a pydantic ``TypeAdapter`` built
when the command runs: importing pydantic and building one adapter per
parameter cost about 150 ms of CPU, half of ``butler token``'s. Most of our
parameters are a ``str``, a ``Path``, a number or a flag given plainly; those are
read here directly. Anything else (a value that is not plainly of its type,
a number with bounds it breaks, any other type) goes to Typer's own
coercion, so every refusal keeps Typer's own message.

It relies on Typer's per-parameter coercion hook (``_runtime_param``), which
is private: ``tests/test_cli_lazy.py`` checks that commands still take this
path (they import no pydantic), so a Typer release that changes it is caught.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer._coercion import RuntimeParam, build_runtime_param, resolve_type_descriptor
from typer._param_types import coerce_cli_path
from typer.core import _TyperParameter

#: An integer as a person types it; anything else is Typer's to judge (and refuse).
PLAIN_INT = re.compile(r"[+-]?[0-9]{1,18}")
PLAIN_FLOAT = re.compile(r"[+-]?[0-9]{1,15}(\.[0-9]{1,15})?")


@dataclass(frozen=True)
class PlainParam(RuntimeParam):
    """A ``str``, ``Path``, number or flag; Typer's coercion for anything unusual."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        info, annotation = self.parameter_info, self.annotation
        if annotation is str and isinstance(value, str):
            return value
        if annotation is Path and isinstance(value, str | Path):
            # Typer's own check of the path flags (exists, dir_okay...); given a Path it
            # needs no pydantic.
            return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        if annotation is bool and isinstance(value, bool):
            return value
        if annotation in (int, float) and not info.clamp:
            number = _plain_number(value, annotation)
            low, high = info.min, info.max
            if number is not None and (low is None or number >= low):
                if high is None or number <= high:
                    return number
        descriptor = resolve_type_descriptor(annotation, info)
        return build_runtime_param(descriptor)._coerce_value(value, param=param, ctx=ctx)


def _plain_number(value: Any, kind: type[int] | type[float]) -> int | float | None:
    """``value`` as an int or float when it plainly is one (a default, or digits typed)."""
    if type(value) is kind or (kind is float and type(value) is int):
        return kind(value)
    pattern = PLAIN_INT if kind is int else PLAIN_FLOAT
    if isinstance(value, str) and pattern.fullmatch(value):
        return kind(value)
    return None


#: The parameter types :class:`PlainParam` reads; a parameter of any other goes to Typer.
PLAIN_TYPES = (str, Path, int, float, bool)


def read_plainly(params: list[Any]) -> list[Any]:
    """``params``, those of a plain type set to be read by :class:`PlainParam`."""
    for param in params:
        if not isinstance(param, _TyperParameter) or param._runtime_param is not None:
            continue
        descriptor = param.type_descriptor
        info = descriptor.parameter_info
        plain = info.parser is None and info.path_type is None and not getattr(info, "count", False)
        if plain and descriptor.file_annotation is None and descriptor.annotation in PLAIN_TYPES:
            param._runtime_param = PlainParam(info, descriptor.annotation)
    return params
