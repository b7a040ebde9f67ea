"""README.md and docs/ against the code: their examples run, their commands exist.

Blocks marked ``<!-- doc-test: NAME -->`` run as written (only the port and the
venv moved to the test's): the quick start, with no database configured, so
the embedded PostgreSQL starts; the health check it shows; the MCP client
example, whose trigger runs the genuine Claude Code against the suite's fake
model; a configuration mistake's one-line error. Every ``butler ...`` line of
every shell block is checked against the command's ``--help``: the command
exists and takes every option the line uses. Every link between the pages
resolves, every folder of the package is in a Layout, and the README stays
short enough to read.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.fakes.model_server import Text
from tests.helpers import REPO, butler_client, free_port, get_json, wait_until

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
_MARKED = re.compile(r"<!-- doc-test: ([\w-]+) -->\s*\n```(\w*)\n(.*?)\n```", re.DOTALL)
_FENCED = re.compile(r"^```(\w*)\n(.*?)\n```", re.DOTALL | re.MULTILINE)
_TOOL = re.compile(r"`(\w+)\(([^)]*)\)`")


def marked(name: str) -> str:
    """The one block of README.md or docs/ marked ``name``."""
    found = [m.group(3) for path in DOCS for m in _MARKED.finditer(read(path)) if m[1] == name]
    assert len(found) == 1, f"README.md and docs/: expected one block marked {name}"
    return found[0]


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def moved(text: str, port: int) -> str:
    """The example with its port and ``.venv/bin/`` moved to this test's."""
    return text.replace("8101", str(port)).replace(".venv/bin/", f"{BIN}/")


@pytest.fixture
def quick_start(tmp_path, fake_model):
    """The quick start's ``butler run`` exactly as written: no database URL, so embedded."""
    lines = [line for line in marked("quickstart").splitlines() if line.strip()]
    # The first line makes the venv this suite already runs in (test_package installs afresh).
    assert lines[0].startswith("python3 -m venv .venv && .venv/bin/pip install")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BUTLER_DB_SCHEMA")}
    env.update(
        BUTLER_DATA_DIR=str(tmp_path / "data"),
        BUTLER_PORT=str(port),
        HOME=str(tmp_path),
        ANTHROPIC_API_KEY="sk-fake",
        ANTHROPIC_BASE_URL=fake_model.url,
    )
    log = (tmp_path / "daemon.log").open("wb")
    argv = shlex.split(moved(lines[1], port))
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()

    def answering() -> bool:
        assert proc.poll() is None, read(tmp_path / "daemon.log")
        try:
            return get_json(f"http://127.0.0.1:{port}/health", timeout=1)[0] == 200
        except OSError:
            return False

    try:
        wait_until(answering, timeout=180)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def served_tools(port: int) -> dict[str, dict]:
    """Each tool the butler serves, with its parameters."""
    async with butler_client(f"http://127.0.0.1:{port}/mcp") as mcp:
        return {tool.name: tool.inputSchema["properties"] for tool in await mcp.list_tools()}


@pytest.mark.slow
def test_the_quick_start_the_health_check_and_the_mcp_client_example(quick_start, fake_model):
    port = quick_start
    health = marked("health").splitlines()
    shown = json.loads(health[1].removeprefix("# ").replace(",...}", "}"))
    answer = subprocess.run(
        ["bash", "-c", moved(health[0], port)], capture_output=True, text=True, timeout=30
    )
    body = json.loads(answer.stdout)
    assert {k: body[k] for k in shown} == shown

    fake_model.script = [Text("Nothing is due today.")]
    client = subprocess.run(
        [sys.executable, "-c", moved(marked("client"), port)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert client.returncode == 0, client.stderr
    assert client.stdout.splitlines() == ['{"dose":"65mg"}', "Nothing is due today."]

    # The quick start's third command: the answer in the terminal.
    fake_model.script = [Text("Your iron, 65mg.")]
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    trigger = subprocess.run(
        shlex.split(moved(marked("trigger"), port)),
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**env, "BUTLER_PORT": str(port)},
        timeout=180,
    )
    assert trigger.returncode == 0, trigger.stderr
    assert trigger.stdout == "Your iron, 65mg.\n"

    # The tools table names real tools with their real parameters.
    page = read(REPO / "docs" / "mcp.md")
    table = page[page.index("Tools every butler serves:") :]
    tools = asyncio.run(served_tools(port))
    for name, params in _TOOL.findall(table):
        assert name in tools, f"README names a tool {name} the butler does not serve"
        for param in filter(None, (p.split("=")[0].strip() for p in params.split(","))):
            assert param in tools[name], f"README: {name}({param}): it has {list(tools[name])}"


@pytest.mark.slow
def test_a_configuration_mistake_is_the_one_line_the_readme_shows(tmp_path):
    roster = tmp_path / "roster"
    for name in ("health", "shared"):
        (roster / name).mkdir(parents=True)
        for path in filter(Path.is_file, (REPO / "roster" / name).glob("*.*")):
            (roster / name / path.name).write_bytes(path.read_bytes())
    toml = roster / "health" / "butler.toml"
    toml.write_text(re.sub(r"(?m)^max_turns = \d+", 'max_turns = "many"', read(toml)))
    result = subprocess.run(
        [BIN / "butler", "run", "--config", "roster/health"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.replace(f"{tmp_path}/", "").strip() == marked("config-error")


@cache
def help_text(command: tuple[str, ...]) -> str:
    env = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"}
    result = subprocess.run(
        [BIN / "butler", *command, "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, f"butler {' '.join(command)}: no such command"
    return result.stdout


def commands(path: Path) -> list[tuple[str, list[str]]]:
    """Every ``butler ...`` line of the file's shell blocks, as words."""
    found = []
    for info, body in _FENCED.findall(read(path)):
        if info not in ("bash", "sh", "shell", "console"):
            continue
        for line in body.splitlines():
            line = line.split("#", 1)[0].strip().removeprefix("$ ")
            line = re.sub(r"^(\w+=\S+\s+)+", "", line)  # VAR=value prefixes
            if line.startswith("butler "):
                found.append((line, line.replace("&", " ").replace("|", " ").split()))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_butler_command_in_the_docs_exists_with_its_options(path):
    for line, words in commands(path):
        command: tuple[str, ...] = ()
        for word in words[1:]:
            if word.startswith("-") or not re.fullmatch(r"[a-z][a-z_-]*", word):
                break
            if f" {word} " not in help_text(command) and f"│ {word}" not in help_text(command):
                break
            command = (*command, word)
        if not words[1].startswith("-"):
            assert command, f"{path.name}: `{line}`: butler has no command {words[1]}"
        text = help_text(command)
        for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", line):
            option = option.split("=")[0]
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), (
                f"{path.name}: `{line}`: butler {' '.join(command)} has no option {option}"
            )


#: The README is where a stranger starts: what it is, the quick start, what next. The
#: rest (measurements, the lockdown, every setting) is in docs/.
README_MOST_LINES = 300
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_short_enough_to_read():
    lines = read(REPO / "README.md").splitlines()
    assert len(lines) <= README_MOST_LINES, f"README.md has {len(lines)} lines"


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", read(path))  # a "#" in a code block is no heading
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", text)}


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_link_between_the_pages_resolves(path):
    text = re.sub(r"(?ms)^```.*?^```", "", read(path))
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # another site: not ours to check here
        file, _, anchor = target.partition("#")
        found = (path.parent / file).resolve() if file else path
        assert found.exists(), f"{path.name}: {target} links to nothing"
        if anchor:
            assert anchor in anchors(found), f"{path.name}: {target}: no such heading"


def layouts() -> str:
    """The README's Layout and docs/architecture.md's map of the layers."""
    readme = read(REPO / "README.md")
    architecture = read(REPO / "docs" / "architecture.md")
    layout = readme[readme.index("## Layout") :].split("\n## ", 1)[0]
    layers = architecture[architecture.index("## The layers") :].split("\n## ", 1)[0]
    return layout + layers


def test_every_folder_of_the_package_is_in_a_layout():
    shown = layouts()
    folders = sorted(
        p.name for p in (REPO / "butler").iterdir() if p.is_dir() and p.name != "__pycache__"
    )
    missing = [name for name in folders if not re.search(rf"(?<![\w/]){name}/", shown)]
    assert missing == [], f"folders of butler/ in no Layout: {missing}"


def test_every_module_the_architecture_names_exists():
    """A path of butler's own code in docs/architecture.md (``spawner/remote.py``, from the
    package; ``tests/conftest.py``, from the repository) names a file there: a module
    renamed or removed takes its mention with it."""
    text = read(REPO / "docs" / "architecture.md")
    named = set(re.findall(r"(?<![\w./:-])((?:[\w-]+/)+[\w-]+\.(?:py|c|h|sql))\b", text))
    missing = sorted(
        p for p in named if not (REPO / p).exists() and not (REPO / "butler" / p).exists()
    )
    assert len(named) > 50, "the architecture names modules by their paths"
    assert missing == [], f"docs/architecture.md names modules that do not exist: {missing}"
