"""The four ways to spawn a builder, and the flag combinations that make sense (pure).

As docs/builders.md says: ``--project`` is spec mode, task text (positional
or ``--task``) is task mode, ``--protocol`` is protocol mode, ``--shell`` is
shell mode, nothing is an error. Each refused combination is one
:class:`UserError` whose message starts with the words that page uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from butler.errors import UserError

Mode = Literal["spec", "task", "protocol", "shell"]
MODES: tuple[Mode, ...] = ("spec", "task", "protocol", "shell")
#: Project ids and protocol names become branch names and folder names.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

NOTHING_TO_SPAWN = (
    "Nothing to spawn: give task text, --task, --protocol NAME, --project ID or --shell"
)


class NothingToSpawn(UserError):
    """No mode was given; the command line answers with its help."""


@dataclass(frozen=True)
class SpawnOptions:
    """What a person asked for, before any file is looked at."""

    text: str | None = None
    task: str | None = None
    files: tuple[str, ...] = ()
    protocol: str | None = None
    args: dict[str, Any] | None = None
    project: str | None = None
    shell: bool = False
    role: str | None = None
    #: Another runtime type than the butler's own, for this builder.
    runtime: str | None = None

    @property
    def task_text(self) -> str | None:
        """The task, however it was given."""
        return self.text if self.text is not None else self.task


def _given(value: object) -> bool:
    return value is not None and value is not False


def choose_mode(options: SpawnOptions) -> Mode:
    """The mode ``options`` ask for; :class:`UserError` for a combination that makes none."""
    has_text = _given(options.text) or _given(options.task)
    if _given(options.project) and has_text:
        raise UserError("Cannot combine --project with task text")
    flags = [
        name
        for name, value in (
            ("--project", options.project),
            ("--protocol", options.protocol),
            ("--shell", options.shell),
        )
        if _given(value)
    ]
    if len(flags) > 1:
        raise UserError(f"Flags are mutually exclusive: {' and '.join(flags)}; choose one mode")
    if has_text and flags:
        raise UserError(f"Cannot combine task text with {flags[0]}")
    if _given(options.text) and _given(options.task):
        raise UserError("Cannot combine task text with --task; give the task once")
    if options.files and not has_text:
        raise UserError("--files requires a task")
    if options.args is not None and not _given(options.protocol):
        raise UserError("--args requires --protocol")
    if options.role is not None and not options.shell:
        raise UserError("--role requires --shell; other modes load their role themselves")
    if has_text:
        if not (options.task_text or "").strip():
            raise UserError("task text is empty; expected what the builder should do")
        return "task"
    if flags:
        return {"--project": "spec", "--protocol": "protocol", "--shell": "shell"}[flags[0]]
    raise NothingToSpawn(NOTHING_TO_SPAWN)


def check_name(value: str, what: str) -> str:
    """A project id or protocol name fit for a branch and a folder; ``..`` never is."""
    if not SAFE_NAME.match(value):
        raise UserError(f"{what} {value!r}: expected letters, digits, '-' or '_' (no '/', no '..')")
    return value
