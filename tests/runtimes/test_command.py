"""The generic ``command`` runtime: argv templates, never a shell."""

from __future__ import annotations

import json
import sys

import pytest

from butler.config import RuntimeConfig, load_config
from butler.errors import ConfigError
from butler.runtimes.command import check_template, render
from butler.runtimes.registry import get_adapter
from butler.spawner.spawner import TriggerRequest
from tests.helpers import free_port, write_butler

pytestmark = pytest.mark.slow

AGENT = """
import json, os, pathlib, sys
args = sys.argv[1:]
prompt = pathlib.Path(args[args.index("--prompt-file") + 1]).read_text()
system = pathlib.Path(args[args.index("--system") + 1]).read_text()
mcp = json.loads(pathlib.Path(args[args.index("--mcp") + 1]).read_text())
if "fail" in prompt:
    sys.stderr.write("agent: cannot do that\\n")
    sys.exit(4)
print(json.dumps({"prompt": prompt, "system": system, "servers": list(mcp["mcpServers"]),
                  "argv": args, "cwd": os.getcwd(), "canary": os.environ.get("CANARY")}))
"""


def test_render_substitutes_inside_elements_only():
    values = {"prompt_file": "/w/p.md", "model": "m"}
    assert render(["--file={prompt_file}", "{model}", "x y"], values) == [
        "--file=/w/p.md",
        "m",
        "x y",
    ]


def test_unknown_placeholder_is_refused():
    with pytest.raises(ValueError, match=r"unknown placeholder \{secret\}"):
        check_template(["agent", "{secret}"])


def test_config_error_for_empty_or_bad_template(roster):
    folder = write_butler(roster, "c", port=free_port(), runtime={"type": "command"})
    with pytest.raises(ConfigError, match="expected a non-empty argv list"):
        load_config(folder)
    folder = write_butler(
        roster, "d", port=free_port(), runtime={"type": "command", "command": ["a", "{nope}"]}
    )
    with pytest.raises(ConfigError, match=r"butler\.runtime\.command: unknown placeholder"):
        load_config(folder)


@pytest.fixture
def command_spawner(make_spawner, tmp_path, monkeypatch):
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    command = [
        sys.executable,
        str(script),
        "--prompt-file",
        "{prompt_file}",
        "--system",
        "{system_prompt_file}",
        "--mcp",
        "{mcp_config}",
        "--model={model}",
    ]
    runtime = {"type": "command", "command": command, "model": "m1", "args": ["--extra", "$HOME"]}
    monkeypatch.setenv("CANARY", "leak")
    return make_spawner(get_adapter("command", RuntimeConfig(**runtime)), runtime=runtime)


async def test_stdout_is_the_answer_and_text_never_meets_a_shell(command_spawner):
    prompt = "Check $(rm -rf /) `whoami`; echo pwned"
    result = await command_spawner.trigger(TriggerRequest(prompt))
    assert result.success, result.error
    seen = json.loads(result.output)
    assert seen["prompt"] == prompt  # passed through a file, byte for byte
    assert seen["system"].startswith("You are a test butler.")
    assert seen["servers"] == ["tester"]
    assert seen["argv"][-3:] == ["--model=m1", "--extra", "$HOME"]  # args appended, unexpanded
    assert seen["cwd"] == str(command_spawner.config.config_dir)
    assert seen["canary"] is None


async def test_non_zero_exit_is_an_error_carrying_stderr(command_spawner):
    result = await command_spawner.trigger(TriggerRequest("please fail"))
    assert result.success is False
    assert result.error == "command exited with status 4: agent: cannot do that"


async def test_missing_program_is_a_clear_error(make_spawner):
    runtime = {"type": "command", "command": ["no-such-agent-cli", "{prompt_file}"]}
    spawner = make_spawner(get_adapter("command", RuntimeConfig(**runtime)), runtime=runtime)
    result = await spawner.trigger(TriggerRequest("x"))
    assert result.success is False and "'no-such-agent-cli' not found on PATH" in result.error
