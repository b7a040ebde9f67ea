"""System prompt composition: includes, shared snippets, errors naming the file."""

from __future__ import annotations

import pytest

from butler.errors import ConfigError
from butler.spawner.prompt import compose_system_prompt


def test_include_is_replaced_by_the_roster_file(roster):
    (roster / "shared" / "NOTIFY.md").write_text("Notify the owner by email.\n")
    prompt = roster / "health" / "CLAUDE.md"
    prompt.parent.mkdir()
    prompt.write_text("# Health\n<!-- @include shared/NOTIFY.md -->\nEnd.\n")
    text = compose_system_prompt(prompt, roster)
    assert text == "# Health\nNotify the owner by email.\nEnd.\n"


def test_nested_includes_and_shared_snippets_appended(roster):
    (roster / "shared" / "A.md").write_text("A then <!-- @include shared/B.md -->")
    (roster / "shared" / "B.md").write_text("B")
    (roster / "shared" / "BUTLER_SKILLS.md").write_text("Skills here.")
    (roster / "shared" / "MCP_LOGGING.md").write_text("Log with tools.")
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include shared/A.md -->")
    assert compose_system_prompt(prompt, roster) == "A then B\n\nSkills here.\n\nLog with tools.\n"


def test_memory_is_appended_after_a_blank_line(roster):
    prompt = roster / "x.md"
    prompt.write_text("Base prompt.")
    assert compose_system_prompt(prompt, roster, "Recent: milk") == "Base prompt.\n\nRecent: milk\n"


def test_include_escaping_the_roster_is_an_error_naming_the_file(roster, tmp_path):
    (tmp_path / "secret.md").write_text("secret")
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include ../secret.md -->")
    with pytest.raises(ConfigError, match=r"x\.md: include '\.\./secret\.md' leaves the roster"):
        compose_system_prompt(prompt, roster)


def test_include_cycle_is_an_error(roster):
    (roster / "shared" / "A.md").write_text("<!-- @include shared/B.md -->")
    (roster / "shared" / "B.md").write_text("<!-- @include shared/A.md -->")
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include shared/A.md -->")
    with pytest.raises(ConfigError, match=r"include cycle x\.md -> A\.md -> B\.md -> A\.md"):
        compose_system_prompt(prompt, roster)


def test_missing_include_names_the_file(roster):
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include shared/NOPE.md -->")
    with pytest.raises(ConfigError, match=r"x\.md: include 'shared/NOPE\.md' not found"):
        compose_system_prompt(prompt, roster)


@pytest.mark.parametrize("include", ["other/notes.md", ".git/config", "health/.env"])
def test_an_include_outside_shared_and_the_own_folder_is_refused(roster, include):
    """A session writes its CLAUDE.md; the daemon, outside its jail, would read another
    butler's folder or the roster's git config (a remote URL with a token) for it."""
    for path in ("other/notes.md", ".git/config", "health/.env"):
        (roster / path).parent.mkdir(parents=True, exist_ok=True)
        (roster / path).write_text("secret\n")
    prompt = roster / "health" / "CLAUDE.md"
    prompt.write_text(f"<!-- @include {include} -->")
    with pytest.raises(ConfigError, match=r"CLAUDE\.md: include .* refused; expected a file in"):
        compose_system_prompt(prompt, roster)


def test_an_include_of_the_own_folder_and_shared_is_read(roster):
    (roster / "shared" / "A.md").write_text("shared")
    (roster / "health" / "notes").mkdir(parents=True)
    (roster / "health" / "notes" / "n.md").write_text("own")
    prompt = roster / "health" / "CLAUDE.md"
    prompt.write_text("<!-- @include shared/A.md --> <!-- @include health/notes/n.md -->")
    assert compose_system_prompt(prompt, roster) == "shared own\n"
