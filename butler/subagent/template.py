"""The prompt template of ``butler ask``: loaded, created on first use, validated, filled.

The template is ``prompt_template.md`` beside the user's ``config.toml``, so a
person can reshape the prompt freely. Only ``${question}`` and
``${sourcesList}`` are substituted; everything else (including other ``${...}``
text) is passed through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from butler.errors import UserError

TEMPLATE_FILE = "prompt_template.md"
DEFAULT_TEMPLATE = "default_prompt_template.md"
QUESTION = "${question}"
SOURCES_LIST = "${sourcesList}"
REQUIRED_PLACEHOLDERS = (QUESTION, SOURCES_LIST)
# One pass over the template: a question that itself contains "${sourcesList}"
# must come out verbatim, not get substituted a second time.
_PLACEHOLDERS = re.compile(r"\$\{(question|sourcesList)\}")


class PromptTemplateError(UserError):
    """The prompt template lacks a required placeholder.

    ``str(error)`` is exactly the message the spec fixes; ``path`` says which
    file, for the command line to add.
    """

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


def default_template() -> str:
    """The template bundled with butler."""
    return resources.files(__package__).joinpath(DEFAULT_TEMPLATE).read_text(encoding="utf-8")


def validate_template(text: str, path: Path | None = None) -> None:
    """Raise :class:`PromptTemplateError` naming every required placeholder missing."""
    missing = [p for p in REQUIRED_PLACEHOLDERS if p not in text]
    if len(missing) == 1:
        message = f"Invalid prompt template: missing required placeholder {missing[0]}"
        raise PromptTemplateError(message, path)
    if missing:
        message = f"Invalid prompt template: missing required placeholders {', '.join(missing)}"
        raise PromptTemplateError(message, path)


def load_template(folder: Path) -> str:
    """Read ``folder/prompt_template.md``, creating it from the default when missing."""
    path = folder / TEMPLATE_FILE
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(default_template(), encoding="utf-8")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the prompt template: {exc}") from None
    validate_template(text, path)
    return text


def sources_list(entries: Sequence[str]) -> str:
    """Format source paths (``./name/`` or ``./name``) as markdown list lines."""
    return "\n".join(f"- {entry}" for entry in entries)


def render_prompt(template: str, question: str, entries: Sequence[str]) -> str:
    """Substitute the two placeholders; leave every other byte of the template alone."""
    values = {"question": question, "sourcesList": sources_list(entries)}
    return _PLACEHOLDERS.sub(lambda match: values[match.group(1)], template)
