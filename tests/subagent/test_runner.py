"""SubagentRunner.ask: temp folder isolation, symlinks, prompt file, the agent process.

Each scenario of docs/ask.md runs the fake agent as a real process in the real
temp folder; what the agent reports is what any agent CLI would have seen.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from butler.errors import UserError
from butler.subagent.runner import AgentFailed, SubagentRunner
from butler.subagent.sources import AgentSettings, Sources, load_user_config
from tests.subagent.conftest import (
    FAKE_AGENT,
    REPORT,
    RunnerFactory,
    SourceTree,
    gone,
    leftovers,
    write_config,
)

pytestmark = pytest.mark.slow

EMPTY_MCP_FILES = (".mcp.json", ".gemini/settings.json", ".cursor/mcp.json", "opencode.json")


async def ask_report(runner: SubagentRunner, sources: list[str], question: str) -> dict[str, Any]:
    return json.loads(await runner.ask(sources, question))


def test_constructor_keeps_config_and_sources(tmp_path: Path) -> None:
    config = AgentSettings(tmp_path / "config.toml")
    sources = Sources({}, tmp_path / "config.toml")
    runner = SubagentRunner(config, sources)
    assert runner.config is config
    assert runner.sources is sources


async def test_temp_folder_is_private_and_named_for_butler(
    make_runner: RunnerFactory, temp_root: Path
) -> None:
    report = await ask_report(make_runner(), ["docs"], "q")
    workdir = Path(report["cwd"])
    assert workdir.parent == temp_root
    assert workdir.name.startswith("butler-ask-")
    # The suffix is a random UUID: two calls never share a folder.
    other = await ask_report(make_runner(), ["docs"], "q")
    assert Path(other["cwd"]) != workdir


async def test_a_template_naming_no_prompt_gets_it_on_stdin_never_in_argv(
    make_runner: RunnerFactory,
) -> None:
    report = await ask_report(make_runner(ask=[*REPORT, "-p"]), ["docs"], "Secret plan?")
    assert "Secret plan?" in report["stdin"]
    assert not any("Secret plan?" in arg for arg in report["argv"])
    named = await ask_report(make_runner(ask=[*REPORT, "{prompt_file}"]), ["docs"], "q")
    assert named["stdin"] == ""  # a template that names it gets stdin closed, as before


async def test_empty_mcp_configs_in_every_format(make_runner: RunnerFactory) -> None:
    report = await ask_report(make_runner(), ["docs"], "q")
    for name in EMPTY_MCP_FILES:
        assert json.loads(report["mcp"][name]) == {}, name
    # Nested formats needed their parent folders created.
    assert report["entries"][".gemini"] == {"dir": True}
    assert report["entries"][".cursor"] == {"dir": True}


async def test_symlinks_for_git_folder_and_file_sources(
    make_runner: RunnerFactory, source_tree: SourceTree
) -> None:
    report = await ask_report(make_runner(), ["langchain", "docs", "readme"], "q")
    entries = report["entries"]
    assert entries["langchain"] == {"symlink": str(source_tree.git)}
    assert entries["docs"] == {"symlink": str(source_tree.folder)}
    assert entries["readme"] == {"symlink": str(source_tree.file)}


async def test_unknown_source_is_named_and_known_ones_listed(
    make_runner: RunnerFactory, temp_root: Path
) -> None:
    with pytest.raises(UserError) as caught:
        await make_runner().ask(["docs", "unknown"], "q")
    message = str(caught.value)
    assert "unknown source 'unknown'" in message
    assert "known sources: docs, langchain, readme" in message
    assert leftovers(temp_root) == []


async def test_source_pointing_nowhere_is_a_user_error(
    make_runner: RunnerFactory, source_tree: SourceTree
) -> None:
    runner = make_runner()
    source_tree.file.unlink()
    with pytest.raises(UserError, match=r"source 'readme' points to .*README\.md, which does not"):
        await runner.ask(["readme"], "q")


async def test_prompt_file_has_question_and_sources_list(make_runner: RunnerFactory) -> None:
    report = await ask_report(make_runner(), ["langchain", "docs"], "How do I create a tool?")
    prompt = report["prompt"]
    assert "How do I create a tool?" in prompt
    assert "- ./langchain/\n- ./docs/" in prompt
    assert "${question}" not in prompt and "${sourcesList}" not in prompt
    # The argv got the path of that very file, inside the agent's folder.
    assert report["argv"] == [str(Path(report["cwd"]) / "prompt.md")]


async def test_file_source_is_listed_without_trailing_slash(make_runner: RunnerFactory) -> None:
    report = await ask_report(make_runner(), ["docs", "readme"], "q")
    assert "- ./docs/\n- ./readme\n" in report["prompt"] + "\n"


async def test_command_template_placeholders_substituted_per_argument(
    make_runner: RunnerFactory,
) -> None:
    ask = [*REPORT, "-p", "{prompt_file}", "--mcp-config", "{mcp_config}", "--in={workdir}"]
    report = await ask_report(make_runner(ask=ask), ["docs"], "q")
    workdir = report["cwd"]
    assert report["argv"] == [
        "-p",
        f"{workdir}/prompt.md",
        "--mcp-config",
        f"{workdir}/.mcp.json",
        f"--in={workdir}",
    ]


async def test_prompt_placeholder_passes_the_prompt_text(make_runner: RunnerFactory) -> None:
    report = await ask_report(make_runner(ask=[*REPORT, "--", "{prompt}"]), ["docs"], "Why {x}?")
    assert report["argv"][0] == "--"
    assert report["argv"][1] == report["prompt"]
    assert "Why {x}?" in report["argv"][1]


async def test_no_shell_ever_interprets_the_question(
    make_runner: RunnerFactory, tmp_path: Path
) -> None:
    pwned = tmp_path / "pwned"
    question = f'"; touch {pwned}; echo "$(touch {pwned})'
    report = await ask_report(make_runner(ask=[*REPORT, "{prompt}"]), ["docs"], question)
    assert question in report["argv"][0]
    assert not pwned.exists()


async def test_stdout_is_the_answer_exactly(make_runner: RunnerFactory) -> None:
    script = "import sys; sys.stdout.write('line one\\n\\nline three  ')"
    answer = await make_runner(ask=[sys.executable, "-c", script]).ask(["docs"], "q")
    assert answer == "line one\n\nline three  "


async def test_agent_failure_raises_with_its_stderr(
    make_runner: RunnerFactory, temp_root: Path
) -> None:
    runner = make_runner(ask=[sys.executable, str(FAKE_AGENT), "fail", "3", "model exploded"])
    with pytest.raises(AgentFailed) as caught:
        await runner.ask(["docs"], "q")
    assert caught.value.returncode == 3
    assert "model exploded" in caught.value.stderr
    assert str(caught.value) == "agent 'fake' exited with status 3: model exploded"
    assert leftovers(temp_root) == []


async def test_missing_agent_binary_is_a_user_error(make_runner: RunnerFactory) -> None:
    runner = make_runner(ask=["no-such-agent-cli-anywhere", "{prompt}"])
    with pytest.raises(UserError, match="cannot run 'no-such-agent-cli-anywhere' \\(not found\\)"):
        await runner.ask(["docs"], "q")


async def test_default_agent_is_always_used(source_tree: SourceTree, temp_root: Path) -> None:
    agents = {
        "first": {"ask": [*REPORT, "first"], "chat": REPORT},
        "second": {"ask": [*REPORT, "second"], "chat": REPORT},
    }
    write_config(
        source_tree.config_dir,
        sources=source_tree.as_config(),
        agents=agents,
        default_agent="second",
    )
    config = load_user_config()
    report = json.loads(await SubagentRunner(config.agents, config.sources).ask(["docs"], "q"))
    assert report["argv"] == ["second"]


async def test_cleanup_after_success_keeps_the_sources(
    make_runner: RunnerFactory, source_tree: SourceTree, temp_root: Path
) -> None:
    report = await ask_report(make_runner(), ["langchain", "docs", "readme"], "q")
    assert gone(report["cwd"])
    assert leftovers(temp_root) == []
    # Removing the folder unlinked the symlinks, never what they point to.
    assert (source_tree.git / "tools.py").is_file()
    assert (source_tree.git / ".git").is_dir()
    assert (source_tree.folder / "guide.md").is_file()
    assert source_tree.file.is_file()


async def test_agent_runs_without_claudecode_marker(
    make_runner: RunnerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asked from inside a Claude Code session, the nested claude must still start.
    monkeypatch.setenv("CLAUDECODE", "1")
    report = await ask_report(make_runner(), ["docs"], "q")
    assert report["claudecode"] is None
    assert os.environ["CLAUDECODE"] == "1"
