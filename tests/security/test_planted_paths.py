"""Every file the daemon reads where a runtime can write (docs/security.md, the trust map),
planted with a link to an owner's file, a link to /dev/zero, a FIFO, a device and a linked
folder: nothing of the owner's reaches what a session gets, and nothing hangs."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from butler.builders import git, plan
from butler.runtimes import transcripts
from butler.runtimes.base import Invocation, McpEndpoint
from butler.runtimes.gemini import read_settings
from butler.runtimes.opencode import read_owner_config
from butler.runtimes.registry import get_adapter
from butler.runtimes.settings import RuntimeConfig
from butler.runtimes.terminals import COPILOT_STATE, codex_project_servers, copilot_state
from butler.spawner.prompt import compose_system_prompt
from tests.builders.conftest import run
from tests.security.untrusted import SECRET, finishes


@dataclass
class Places:
    """The folders of one butler, one builder and one session, as the daemon made them."""

    roster: Path
    folder: Path
    repo: Path
    worktree: Path
    home: Path
    workdir: Path

    def invocation(self) -> Invocation:
        return Invocation(
            prompt="Fix it",
            system_prompt="You are tester.",
            cwd=self.worktree,
            workdir=self.workdir,
            home=self.home,
            env={"PATH": "/usr/bin:/bin"},
            mcp=McpEndpoint("tester", "http://127.0.0.1:1/mcp", {}),
            max_turns=5,
            timeout_s=60,
            config_dir=self.folder,
        )


def _claude_state(places: Places) -> Any:
    adapter = get_adapter("claude-code", RuntimeConfig(type="claude-code", cli_path="/bin/true"))
    command = adapter.interactive_command(places.invocation())
    return command.files[places.home / ".claude" / ".claude.json"]


def _exclude(places: Places) -> Any:
    git.prepare(places.repo)
    return (places.repo / ".git" / "info" / "exclude").read_text()


JSONL = "\n".join(
    json.dumps(line)
    for line in [
        {
            "type": "assistant",
            "sessionId": SECRET,
            "message": {"id": "m", "model": SECRET, "usage": {"input_tokens": 1}},
        },
        {"type": "turn_context", "payload": {"model": SECRET}},
        {
            "type": "event_msg",
            "payload": {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1}}},
        },
        {"sessionId": SECRET, "id": "g", "type": "gemini", "tokens": {"input": 1}, "model": SECRET},
    ]
)
OBJECT = json.dumps(
    {
        "token": SECRET,
        "trustedFolders": [SECRET],
        "provider": {SECRET: {}},
        "modelMetrics": {SECRET: {"usage": {"inputTokens": 1}}},
        "projects": {"/w": {"lastSessionId": SECRET, "lastCost": 1.0}},
    }
)
TOML = f'[mcp_servers.{SECRET}]\nurl = "http://x"\n'

#: (name, where, path below it, what the owner's file holds, what the daemon does with it)
READERS: list[tuple[str, str, str, str, Callable[[Places], Any]]] = [
    (
        "CLAUDE.md",
        "folder",
        "CLAUDE.md",
        "text",
        lambda p: compose_system_prompt(p.folder / "CLAUDE.md", p.roster),
    ),
    (
        "an include",
        "roster",
        "tester/notes/inc.md",
        "text",
        lambda p: compose_system_prompt(p.folder / "CLAUDE.md", p.roster),
    ),
    (
        "a shared snippet",
        "roster",
        "shared/BUTLER_SKILLS.md",
        "text",
        lambda p: compose_system_prompt(p.folder / "CLAUDE.md", p.roster),
    ),
    (
        "the builder role",
        "folder",
        "roles/builder.md",
        "text",
        lambda p: plan.builder_role(p.folder).text(),
    ),
    (
        "a named role",
        "folder",
        "roles/reviewer.md",
        "text",
        lambda p: plan.find_role(p.folder, "reviewer").text(),
    ),
    (
        "a repository's role",
        "repo",
        "roles/custom.md",
        "text",
        lambda p: plan.find_role(p.folder, "custom", p.repo).text(),
    ),
    (
        "a protocol",
        "folder",
        "protocols/p/protocol.md",
        "text",
        lambda p: plan.find_protocol(p.folder, "p"),
    ),
    (
        "a protocol's role",
        "folder",
        "protocols/p/role.md",
        "text",
        lambda p: plan.protocol_role(p.folder, "p").text(),
    ),
    (
        "Codex project config",
        "worktree",
        ".codex/config.toml",
        "toml",
        lambda p: codex_project_servers(p.worktree),
    ),
    ("opencode.json", "folder", "opencode.json", "object", lambda p: read_owner_config(p.folder)),
    ("Gemini settings", "home", ".gemini/settings.json", "object", lambda p: read_settings(p.home)),
    ("Claude Code state", "home", ".claude/.claude.json", "object", _claude_state),
    (
        "Copilot state",
        "home",
        COPILOT_STATE,
        "object",
        lambda p: copilot_state(p.home, COPILOT_STATE, p.worktree),
    ),
    (
        "a Claude transcript",
        "home",
        ".claude/projects/p/s.jsonl",
        "jsonl",
        lambda p: transcripts.claude(p.home),
    ),
    (
        "a Codex rollout",
        "home",
        ".codex/sessions/d/rollout-1.jsonl",
        "jsonl",
        lambda p: transcripts.codex(p.home),
    ),
    (
        "a Gemini chat",
        "home",
        ".gemini/tmp/w/chats/session-1.jsonl",
        "jsonl",
        lambda p: transcripts.gemini(p.home),
    ),
    (
        "the OpenCode store",
        "home",
        transcripts.OPENCODE_STORE,
        "sqlite",
        lambda p: transcripts.opencode(p.home),
    ),
    (
        "the Copilot report",
        "workdir",
        "copilot-usage.json",
        "object",
        lambda p: transcripts.copilot(p.workdir, "copilot-usage.json"),
    ),
    ("info/exclude", "repo", ".git/info/exclude", "text", _exclude),
]
KINDS = ["link to an owner's file", "link to /dev/zero", "FIFO", "device", "linked folder"]


@pytest.fixture
def places(tmp_path: Path) -> Places:
    roster = tmp_path / "roster"
    folder = roster / "tester"
    repo = tmp_path / "repo"
    worktree = repo / ".builders" / "b1"
    found = Places(roster, folder, repo, worktree, tmp_path / "home", tmp_path / "work")
    files = {
        folder / "CLAUDE.md": "You are tester. <!-- @include tester/notes/inc.md -->\n",
        folder / "notes" / "inc.md": "Included.\n",
        roster / "shared" / "BUTLER_SKILLS.md": "Skills.\n",
        folder / "roles" / "builder.md": "ROLE builder\n",
        folder / "roles" / "reviewer.md": "ROLE reviewer\n",
        folder / "protocols" / "p" / "protocol.md": "# P\n",
        folder / "protocols" / "p" / "role.md": "ROLE p\n",
        folder / "opencode.json": "{}",
        repo / "roles" / "custom.md": "ROLE custom\n",
        repo / "README.md": "# repo\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    run("git", "init", "-q", str(repo), cwd=tmp_path)
    found.worktree.mkdir(parents=True)
    (found.worktree / ".git").write_text("gitdir: elsewhere\n")
    for folder_ in (found.home, found.workdir):
        folder_.mkdir()
    return found


def owner_file(tmp_path: Path, name: str, form: str) -> Path:
    """A file of the owner's the daemon can read and a session cannot, holding the secret
    in the form the reader understands (so following a link would carry it through)."""
    path = tmp_path / "owner" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if form == "sqlite":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE message (session_id text, data text)")
            data = {"role": "assistant", "modelID": SECRET, "tokens": {"input": 1}}
            db.execute("INSERT INTO message VALUES (?, ?)", (SECRET, json.dumps(data)))
    else:
        text = {"text": f"{SECRET}\n", "object": OBJECT, "jsonl": JSONL, "toml": TOML}[form]
        path.write_text(text)
    return path


def plant(target: Path, kind: str, tmp_path: Path, form: str) -> None:
    """Put ``kind`` at ``target`` as a runtime would (``target`` need not exist yet)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir() or target.is_file() or target.is_symlink():
        target.unlink()
    if kind == "link to an owner's file":
        os.symlink(owner_file(tmp_path, target.name, form), target)
    elif kind == "link to /dev/zero":
        os.symlink("/dev/zero", target)
    elif kind == "FIFO":
        os.mkfifo(target)
    elif kind == "device" and os.geteuid() == 0:
        os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    elif kind == "device":  # only root makes device nodes: the nearest a runtime could
        os.symlink("/dev/zero", target)
    else:  # the folder holding it, made a link to an owner's folder holding such a file
        owned = owner_file(tmp_path, target.name, form).parent
        os.rename(target.parent, target.parent.with_name(target.parent.name + ".old"))
        os.symlink(owned, target.parent)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("name", "where", "relative", "form", "reader"), READERS, ids=[r[0] for r in READERS]
)
def test_nothing_planted_reaches_a_session_or_hangs_the_daemon(
    places: Places, tmp_path: Path, kind, name, where, relative, form, reader
):
    if kind == "linked folder" and "/" not in relative:
        kind = "link to an owner's file"  # right in the trusted folder: no folder between
    plant(getattr(places, where) / relative, kind, tmp_path, form)
    outcome = finishes(lambda: reader(places))
    assert SECRET not in repr(outcome) and SECRET not in str(outcome), (name, kind, outcome)
    if name == "info/exclude":
        assert owner_file(tmp_path, "exclude", form).read_text() == f"{SECRET}\n"
