"""The prompt template: bundled default, auto-creation, validation, substitution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from butler.subagent.template import (
    PromptTemplateError,
    default_template,
    load_template,
    render_prompt,
    validate_template,
)
from tests.subagent.conftest import RunnerFactory, leftovers

BOTH_MISSING = "Invalid prompt template: missing required placeholders ${question}, ${sourcesList}"


def test_default_template_has_sections_and_tool_instructions() -> None:
    text = default_template()
    assert "# Question\n\n${question}" in text
    assert "# Available Sources\n\n${sourcesList}" in text
    for tool in ("Glob", "Grep", "Read"):
        assert f"**{tool}**" in text
    validate_template(text)  # the default passes its own validation


def test_default_template_is_a_bundled_file() -> None:
    import butler.subagent

    bundled = Path(butler.subagent.__file__).with_name("default_prompt_template.md")
    assert bundled.read_text(encoding="utf-8") == default_template()


async def test_template_created_from_default_on_first_ask(
    make_runner: RunnerFactory, config_dir: Path
) -> None:
    path = config_dir / "prompt_template.md"
    runner = make_runner()
    assert not path.exists()
    report = json.loads(await runner.ask(["docs"], "What is in the guide?"))
    # The template lives beside config.toml and is the default, then used for the prompt.
    assert path.parent == runner.config.config_file.parent
    assert path.read_text(encoding="utf-8") == default_template()
    expected = default_template().replace("${question}", "What is in the guide?")
    assert report["prompt"] == expected.replace("${sourcesList}", "- ./docs/")


async def test_existing_template_is_used_and_custom_content_preserved(
    make_runner: RunnerFactory, config_dir: Path
) -> None:
    custom = (
        "---\ntitle: my own\n---\n# Ask\n${question}\n\n## Where\n${sourcesList}\n\n"
        "Keep ${other}, {prompt_file}, $question and ${ question } as written.\n"
    )
    runner = make_runner()
    (config_dir / "prompt_template.md").write_text(custom, encoding="utf-8")
    report = json.loads(await runner.ask(["langchain", "readme"], "Q?"))
    assert report["prompt"] == (
        "---\ntitle: my own\n---\n# Ask\nQ?\n\n## Where\n- ./langchain/\n- ./readme\n\n"
        "Keep ${other}, {prompt_file}, $question and ${ question } as written.\n"
    )
    assert (config_dir / "prompt_template.md").read_text(encoding="utf-8") == custom


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Sources: ${sourcesList}",
            "Invalid prompt template: missing required placeholder ${question}",
        ),
        ("Q: ${question}", "Invalid prompt template: missing required placeholder ${sourcesList}"),
        ("nothing to fill in", BOTH_MISSING),
    ],
)
def test_validation_messages(text: str, message: str) -> None:
    with pytest.raises(PromptTemplateError) as caught:
        validate_template(text)
    assert str(caught.value) == message


async def test_invalid_template_stops_ask_before_any_agent_runs(
    make_runner: RunnerFactory, config_dir: Path, temp_root: Path
) -> None:
    runner = make_runner()
    path = config_dir / "prompt_template.md"
    path.write_text("# Question\n${question}\n", encoding="utf-8")
    with pytest.raises(PromptTemplateError) as caught:
        await runner.ask(["docs"], "q")
    assert str(caught.value).endswith("missing required placeholder ${sourcesList}")
    assert caught.value.path == path
    assert leftovers(temp_root) == []


def test_load_template_creates_missing_folder(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    assert load_template(folder) == default_template()
    assert (folder / "prompt_template.md").is_file()


def test_substitution_is_one_pass() -> None:
    # A question quoting a placeholder stays as the person typed it.
    prompt = render_prompt("${question}|${sourcesList}", "what is ${sourcesList}?", ["./a/"])
    assert prompt == "what is ${sourcesList}?|- ./a/"


def test_sources_list_format() -> None:
    assert render_prompt("${question}\n${sourcesList}", "q", ["./langchain/", "./langgraph/"]) == (
        "q\n- ./langchain/\n- ./langgraph/"
    )
