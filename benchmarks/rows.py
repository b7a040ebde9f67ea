"""A benchmark's row: what it measures, its reference from the same run, and its goal.

A row says exactly what was measured (``label``, and ``measures`` in a
sentence) and the figure it is compared with. Only a row with a goal counts
in "N of M rows meet their goal"; a row without one is shown for what it
explains, never counted as met.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Goal:
    """A goal in words (``<= 1.3x``), and whether (ours, reference) meets it."""

    words: str
    met: Callable[[float, float], bool]


def ratio_at_most(limit: float) -> Goal:
    return Goal(f"<= {limit:g}x", lambda ours, ref: ours <= limit * ref)


def ratio_at_least(limit: float) -> Goal:
    return Goal(f">= {limit:g}x", lambda ours, ref: ours >= limit * ref)


def at_most(limit: float, unit: str) -> Goal:
    return Goal(f"<= {limit:g} {unit}", lambda ours, _: ours <= limit)


def reference_plus(margin: float, unit: str) -> Goal:
    return Goal(f"<= reference + {margin:g} {unit}", lambda ours, ref: ours <= ref + margin)


@dataclass(frozen=True)
class Row:
    """One figure of butler's beside its reference, measured in the same run."""

    label: str
    ours: float
    ref: float
    ref_name: str
    unit: str = "ms"
    goal: Goal | None = None
    #: One sentence: what exactly was timed or counted, and how.
    measures: str = ""

    @property
    def ratio(self) -> float:
        return self.ours / self.ref if self.ref else float("inf")

    def met(self) -> bool | None:
        """Whether the goal is met; None for a row without one."""
        return None if self.goal is None else self.goal.met(self.ours, self.ref)


def tally(rows: Iterable[Row]) -> tuple[int, int]:
    """(rows that meet their goal, rows that have one): rows without a goal are not counted."""
    verdicts = [row.met() for row in rows]
    counted = [v for v in verdicts if v is not None]
    return sum(counted), len(counted)


def table(rows: list[Row], verdicts: bool) -> str:
    """The rows as a Markdown table, then what each row measures, numbered."""
    lines = ["| # | what | butler | reference | ratio | goal |" + (" met |" if verdicts else "")]
    lines.append("|---|---|---|---|---|---|" + ("---|" if verdicts else ""))
    for n, row in enumerate(rows, 1):
        cells = (
            f"| {n} | {row.label} | {row.ours:.1f} {row.unit} "
            f"| {row.ref_name}: {row.ref:.1f} {row.unit} | {row.ratio:.2f}x "
            f"| {row.goal.words if row.goal else 'none (not counted)'} |"
        )
        if verdicts:
            met = row.met()
            cells += " |" if met is None else " yes |" if met else " **no** |"
        lines.append(cells)
    notes = [f"{n}. {row.measures}" for n, row in enumerate(rows, 1) if row.measures]
    return "\n".join(lines + (["", *notes] if notes else []))


def paired_differences(ours: list[float], ref: list[float]) -> list[float]:
    """``ours[i] - ref[i]`` for runs made side by side, never pairs of sorted lists.

    Sorting both lists and pairing by rank pairs a fast run of one with a fast
    run of the other taken at different moments, which understates what one
    adds under varying load.
    """
    if len(ours) != len(ref):
        raise ValueError(f"paired runs differ in number: {len(ours)} and {len(ref)}")
    return [a - b for a, b in zip(ours, ref, strict=True)]
