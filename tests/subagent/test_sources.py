"""The user config: sources, agents, placeholders, and `sources add`."""

from __future__ import annotations

from pathlib import Path

import pytest

from butler.errors import ConfigError, UserError
from butler.subagent.sources import (
    BUILTIN_AGENTS,
    add_source,
    config_path,
    load_user_config,
)
from tests.subagent.conftest import REPORT, SourceTree, write_config


def test_config_folder_follows_butler_config_home(config_dir: Path) -> None:
    assert config_path() == config_dir / "config.toml"


def test_missing_config_means_builtin_claude_code(config_dir: Path) -> None:
    config = load_user_config()
    agent = config.agents.agent()
    assert agent.name == "claude-code"
    assert list(agent.ask) == BUILTIN_AGENTS["claude-code"]["ask"]
    assert len(config.sources) == 0


def test_builtin_claude_ask_takes_the_prompt_on_stdin_and_no_settings() -> None:
    ask = BUILTIN_AGENTS["claude-code"]["ask"]
    assert Path(ask[0]).name == "claude" and ask[1] == "-p"
    # No {prompt} in argv: every local user reads argv in ps.
    assert not any("{prompt" in arg for arg in ask)
    assert "--strict-mcp-config" in ask and "--setting-sources=" in ask


def test_sources_kinds_and_paths(source_tree: SourceTree) -> None:
    write_config(source_tree.config_dir, sources=source_tree.as_config())
    sources = {s.name: s for s in load_user_config().sources}
    assert {name: s.kind for name, s in sources.items()} == {
        "docs": "folder",
        "langchain": "git",
        "readme": "file",
    }
    assert sources["langchain"].path == source_tree.git


def test_relative_and_home_paths(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    write_config(config_dir, sources={"near": "notes", "home": "~/src"})
    sources = {s.name: s.path for s in load_user_config().sources}
    assert sources == {"near": config_dir / "notes", "home": Path("/home/someone/src")}


def test_user_agent_overrides_and_partial_override(config_dir: Path) -> None:
    write_config(config_dir, agents={"claude-code": {"chat": ["claude"]}})
    agent = load_user_config().agents.agent()
    assert agent.chat == ("claude",)
    assert list(agent.ask) == BUILTIN_AGENTS["claude-code"]["ask"]


@pytest.mark.parametrize(
    ("agents", "default", "message"),
    [
        ({}, "nobody", "default_agent 'nobody' names no agent; known agents: claude-code"),
        ({"x": {"ask": "claude -p {prompt}", "chat": ["x"]}}, "x", "argv, not a shell command"),
        ({"x": {"ask": [*REPORT, "{prompt_fil}"], "chat": ["x"]}}, "x", "unknown placeholder"),
        ({"x": {"ask": ["x"], "chat": ["x", "{prompt}"]}}, "x", "chat: unknown placeholder"),
        ({"x": {"ask": ["x"]}}, "x", "agents.x.chat is missing"),
        ({"x": {"ask": [], "chat": ["x"]}}, "x", "non-empty list of strings"),
        ({"x": {"ask": ["x"], "chat": ["x"], "asks": ["x"]}}, "x", "unknown key 'asks'"),
    ],
)
def test_invalid_agent_config(
    config_dir: Path, agents: dict[str, dict[str, object]], default: str, message: str
) -> None:
    write_config(config_dir, agents=agents, default_agent=default)  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as caught:
        load_user_config()
    assert message in str(caught.value)
    assert str(config_dir / "config.toml") in str(caught.value)


@pytest.mark.parametrize("name", ["prompt.md", ".hidden", "a/b", "mcp.json", ""])
def test_source_names_that_would_break_the_folder(config_dir: Path, name: str) -> None:
    write_config(config_dir, sources={name: "/tmp"})
    with pytest.raises(UserError, match="invalid source name"):
        load_user_config()


def test_invalid_toml_is_one_line(config_dir: Path) -> None:
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").write_text("[sources\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_user_config()


def test_add_source_keeps_comments_and_other_tables(
    source_tree: SourceTree, config_dir: Path
) -> None:
    path = config_dir / "config.toml"
    path.write_text(
        '# my butler ask config\n[agents]\ndefault_agent = "claude-code"\n\n'
        '[sources] # what I read\n"docs" = ' + f'"{source_tree.folder}"\n',
        encoding="utf-8",
    )
    add_source("lang.chain", source_tree.git)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# my butler ask config\n")
    sources = {s.name: s.path for s in load_user_config().sources}
    assert sources == {"docs": source_tree.folder, "lang.chain": source_tree.git}


def test_add_source_creates_the_file(source_tree: SourceTree, config_dir: Path) -> None:
    add_source("readme", source_tree.file)
    assert [s.name for s in load_user_config().sources] == ["readme"]


def test_add_source_refuses_duplicates_and_missing_paths(
    source_tree: SourceTree, tmp_path: Path
) -> None:
    add_source("docs", source_tree.folder)
    with pytest.raises(UserError, match="a source named 'docs' already exists"):
        add_source("docs", source_tree.file)
    with pytest.raises(UserError, match="does not exist"):
        add_source("ghost", tmp_path / "ghost")
