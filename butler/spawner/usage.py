"""A resumed session's own usage, for runtimes that report the conversation's total.

Codex and Copilot report the tokens of the whole thread on a resume, Claude
its whole cost. Each session keeps the raw totals on its row (:func:`totals`,
written with its outcome by :mod:`.closing`); a resumed one records what it
added to its parent's totals (:func:`own_share`), so summing rows never
counts a request twice.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from butler.runtimes.base import RuntimeResult, Usage
from butler.store.sessions import TOTALS_KEY


def totals(result: RuntimeResult, fields: frozenset[str]) -> dict[str, Any]:
    """The running totals the runtime reported, for the fields it reports so."""
    values = {**asdict(result.usage), "cost_usd": result.cost_usd}
    return {name: values[name] for name in sorted(fields)}


def own_share(
    result: RuntimeResult, fields: frozenset[str], parent: dict[str, Any] | None
) -> RuntimeResult:
    """``result`` with each running total replaced by what this session added."""
    if not fields or parent is None:
        return result
    before = (parent.get("metadata") or {}).get(TOTALS_KEY) or {
        name: parent.get(name) for name in fields
    }
    now = totals(result, fields)
    share = {name: _less(now[name], before.get(name)) for name in fields}
    usage = {k: share.get(k, v) for k, v in asdict(result.usage).items()}
    cost = share.get("cost_usd", result.cost_usd)
    return replace(result, usage=Usage(**usage), cost_usd=cost)


def _less(now: Any, before: Any) -> Any:
    if now is None or before is None or now < before:
        return now  # no total to subtract, or the runtime started counting afresh
    return round(now - before, 6) if isinstance(now, float) else now - before
