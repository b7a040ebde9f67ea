"""Fixtures for ask/chat: a private user config folder, real sources, a fake agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from butler.subagent.runner import SubagentRunner
from butler.subagent.sources import load_user_config

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
REPORT = [sys.executable, str(FAKE_AGENT), "report"]


def toml_value(value: object) -> str:
    """JSON strings and string arrays are valid TOML values."""
    return json.dumps(value)


def write_config(
    folder: Path,
    *,
    sources: Mapping[str, Path | str] | None = None,
    agents: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    default_agent: str | None = None,
    extra: str = "",
) -> Path:
    """Write ``folder/config.toml`` with the given tables; return its path."""
    lines = ["[sources]"]
    lines += [f"{json.dumps(n)} = {toml_value(str(p))}" for n, p in (sources or {}).items()]
    lines += ["", "[agents]"]
    if default_agent:
        lines.append(f"default_agent = {toml_value(default_agent)}")
    for name, commands in (agents or {}).items():
        lines += ["", f"[agents.{json.dumps(name)}]"]
        for key, argv in commands.items():
            # A string stays a string: tests check that shell strings are refused.
            lines.append(f"{key} = {toml_value(argv if isinstance(argv, str) else list(argv))}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


@dataclass
class SourceTree:
    """Three real sources of each kind, and the folder the config lives in."""

    config_dir: Path
    git: Path
    folder: Path
    file: Path

    def as_config(self) -> dict[str, Path]:
        return {"langchain": self.git, "docs": self.folder, "readme": self.file}


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp folder as the runner sees it: private to this test."""
    root = tmp_path / "systemp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    return root


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BUTLER_CONFIG_HOME, never the real user's config."""
    folder = tmp_path / "config"
    monkeypatch.setenv("BUTLER_CONFIG_HOME", str(folder))
    return folder


@pytest.fixture
def source_tree(tmp_path: Path, config_dir: Path) -> SourceTree:
    """A git checkout (under the config folder, as the spec places it), a folder, a file."""
    git = config_dir / "sources" / "git" / "langchain"
    git.mkdir(parents=True)
    (git / "tools.py").write_text("def create_tool():\n    return 'tool'\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(git)], check=True)
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n", encoding="utf-8")
    file = tmp_path / "README.md"
    file.write_text("# Readme\n", encoding="utf-8")
    return SourceTree(config_dir, git, folder, file)


RunnerFactory = Callable[..., SubagentRunner]


@pytest.fixture
def make_runner(source_tree: SourceTree, temp_root: Path) -> RunnerFactory:
    """Write a config whose default agent runs the given argv lists; build a runner."""

    def make(
        ask: Sequence[str] = (*REPORT, "{prompt_file}"),
        chat: Sequence[str] = (*REPORT,),
        **kwargs: object,
    ) -> SubagentRunner:
        agents = {"fake": {"ask": ask, "chat": chat}}
        write_config(
            source_tree.config_dir,
            sources=source_tree.as_config(),
            agents=agents,
            default_agent="fake",
            **kwargs,  # type: ignore[arg-type]
        )
        config = load_user_config()
        return SubagentRunner(config.agents, config.sources, config.sandbox)

    return make


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def leftovers(root: Path) -> list[Path]:
    """Temp folders the runner left behind."""
    return sorted(root.glob("butler-ask-*"))


def cli_env(config_dir: Path, temp_root: Path, **extra: str) -> dict[str, str]:
    """Environment for ``butler`` as a subprocess, confined to the test's folders."""
    env = {**os.environ, "BUTLER_CONFIG_HOME": str(config_dir), "TMPDIR": str(temp_root)}
    env.update(extra)
    return env


def gone(path: str) -> bool:
    """Whether the folder an agent reported as its cwd no longer exists."""
    return not Path(path).exists()
