"""How to run each genuine agent CLI offline against the fake model server.

Each recipe builds the argv, environment and config files for one headless
run that talks only to 127.0.0.1: the model API is the `FakeModelServer`,
the tools come from one streamable-HTTP MCP server, and every bit of state
goes under a throwaway home. The environment is built from scratch (only
PATH is inherited) so no credential or user config of the machine leaks in.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIS = REPO / "clis"
NODE_BIN = CLIS / "node_modules" / ".bin"
FAKE_API_KEY = "fake-key"


def _bundled_claude() -> Path:
    # The SDK runs its bundled binary before anything on PATH, so that is
    # the one worth testing.
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return Path("/nonexistent/claude_agent_sdk/_bundled/claude")
    return Path(spec.origin).parent / "_bundled" / "claude"


CLAUDE_BUNDLED = _bundled_claude()


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one CLI run."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    dirs: list[Path]
    """Directories that must exist (homes, working directory)."""
    stdin: str | None = None
    files: dict[Path, str] = field(default_factory=dict)
    """Config files the CLI reads, by path."""

    def prepare(self) -> None:
        """Create the directories and config files this launch relies on."""
        for directory in [self.cwd, *self.dirs]:
            directory.mkdir(parents=True, exist_ok=True)
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


@dataclass(frozen=True)
class Target:
    """Where a run points: the fake model, one MCP server, private dirs."""

    model_url: str
    mcp_name: str
    mcp_url: str
    home: Path
    workdir: Path
    prompt: str
    cache: Path
    """A cache kept across runs (Copilot unpacks ~235 MB into it on first start)."""


@dataclass(frozen=True)
class Recipe:
    """One CLI: its binary, how to install it, and its launch builder."""

    name: str
    binary: Path
    install: str
    build: Callable[[Target], Launch]

    def missing_reason(self) -> str | None:
        """Why the CLI cannot run here, or None when its binary is present."""
        if self.binary.exists():
            return None
        return f"{self.name} CLI not installed at {self.binary}; install it with: {self.install}"


def _npm(package: str) -> str:
    return f"cd {CLIS} && npm ci  # {package}, version pinned in clis/package-lock.json"


def _base_env(target: Target) -> dict[str, str]:
    # PATH only: the npm launchers need `node`; nothing else of ours leaks in.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(target.home)}


def claude(target: Target) -> Launch:
    """Claude Code the way claude-agent-sdk drives it: stream-json on stdin and stdout."""
    mcp = {"mcpServers": {target.mcp_name: {"type": "http", "url": target.mcp_url}}}
    env = _base_env(target) | {
        "ANTHROPIC_BASE_URL": target.model_url,
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        # 2.1.332 otherwise hides MCP tools behind its ToolSearch tool.
        "ENABLE_TOOL_SEARCH": "false",
    }
    argv = [
        str(CLAUDE_BUNDLED),
        "--output-format", "stream-json",
        "--verbose",
        "--system-prompt", "You are a test agent.",
        "--allowedTools", f"mcp__{target.mcp_name}__state_set",
        "--mcp-config", json.dumps(mcp),
        "--strict-mcp-config",
        "--setting-sources", "",
        "--input-format", "stream-json",
    ]  # fmt: skip
    message = {
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": target.prompt},
        "parent_tool_use_id": None,
    }
    return Launch(argv, env, target.workdir, [target.home], stdin=json.dumps(message) + "\n")


def codex(target: Target) -> Launch:
    """`codex exec --json` with a custom Responses provider and per-run `-c` MCP config."""
    provider = (
        f'{{name="fake", base_url="{target.model_url}/v1", '
        'wire_api="responses", env_key="FAKE_MODEL_KEY"}'
    )
    server = f"mcp_servers.{target.mcp_name}"
    env = _base_env(target) | {
        "CODEX_HOME": str(target.home / ".codex"),
        "FAKE_MODEL_KEY": FAKE_API_KEY,
    }
    argv = [
        str(NODE_BIN / "codex"), "exec", "--json",
        "--skip-git-repo-check", "--ephemeral", "--ignore-user-config",
        "-C", str(target.workdir),
        "-m", "fake-model",
        "-c", "model_provider=fake",
        "-c", f"model_providers.fake={provider}",
        "-c", f'{server}.url="{target.mcp_url}"',
        "-c", f'{server}.default_tools_approval_mode="approve"',
        "-c", "analytics.enabled=false",
        "-c", 'otel.metrics_exporter="none"',
        "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps",
        target.prompt,
    ]  # fmt: skip
    # CODEX_HOME must exist beforehand.
    return Launch(argv, env, target.workdir, [target.home, target.home / ".codex"])


def gemini(target: Target) -> Launch:
    """`gemini -p` with user settings in a private GEMINI_CLI_HOME."""
    settings = {
        # GOOGLE_GEMINI_BASE_URL alone selects "gateway" auth, refused headless.
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "mcpServers": {target.mcp_name: {"httpUrl": target.mcp_url, "trust": True}},
    }
    env = _base_env(target) | {
        "GEMINI_CLI_HOME": str(target.home),
        "GEMINI_API_KEY": FAKE_API_KEY,
        "GOOGLE_GEMINI_BASE_URL": target.model_url,
    }
    argv = [
        str(NODE_BIN / "gemini"),
        "-p", target.prompt,
        "-o", "stream-json",
        "--approval-mode", "yolo",
        "--skip-trust",
        "--allowed-mcp-server-names", target.mcp_name,
    ]  # fmt: skip
    files = {target.home / ".gemini" / "settings.json": json.dumps(settings)}
    return Launch(argv, env, target.workdir, [target.home], files=files)


def opencode(target: Target) -> Launch:
    """`opencode run --format json` with inline config: an openai-compatible provider."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": f"{target.model_url}/v1", "apiKey": FAKE_API_KEY},
                "models": {"fake-model": {"name": "Fake model"}},
            }
        },
        "model": "fake/fake-model",
        "mcp": {target.mcp_name: {"type": "remote", "url": target.mcp_url, "enabled": True}},
        "autoupdate": False,
        "share": "disabled",
    }
    home = target.home
    env = _base_env(target) | {
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        # It npm-installs @opencode-ai/plugin into its config dir on every
        # fresh home; a closed loopback registry makes that fail fast, offline.
        "npm_config_registry": "http://127.0.0.1:9/",
    }
    argv = [str(NODE_BIN / "opencode"), "run", "--format", "json", target.prompt]
    return Launch(argv, env, target.workdir, [target.home])


def copilot(target: Target) -> Launch:
    """`copilot -p` in offline BYOK mode against a chat-completions provider."""
    mcp = {"mcpServers": {target.mcp_name: {"type": "http", "url": target.mcp_url, "tools": ["*"]}}}
    env = _base_env(target) | {
        "COPILOT_HOME": str(target.home / ".copilot"),
        # The launcher unpacks its runtime into $XDG_CACHE_HOME/copilot once.
        "XDG_CACHE_HOME": str(target.cache),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{target.model_url}/v1",
        "COPILOT_PROVIDER_API_KEY": FAKE_API_KEY,
        "COPILOT_MODEL": "fake-model",
    }
    argv = [
        str(NODE_BIN / "copilot"),
        "-p", target.prompt,
        "--output-format", "json",
        "--allow-all-tools",
        "--additional-mcp-config", json.dumps(mcp),
    ]  # fmt: skip
    return Launch(argv, env, target.workdir, [target.home, target.home / ".copilot"])


RECIPES = {
    recipe.name: recipe
    for recipe in (
        Recipe("claude", CLAUDE_BUNDLED, "pip install claude-agent-sdk==0.2.189", claude),
        Recipe("codex", NODE_BIN / "codex", _npm("@openai/codex"), codex),
        Recipe("gemini", NODE_BIN / "gemini", _npm("@google/gemini-cli"), gemini),
        Recipe("opencode", NODE_BIN / "opencode", _npm("opencode-ai"), opencode),
        Recipe("copilot", NODE_BIN / "copilot", _npm("@github/copilot"), copilot),
    )
}


@dataclass(frozen=True)
class Finished:
    """The outcome of one CLI run."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool

    def describe(self) -> str:
        """Exit status and output tails, for assertion messages."""
        status = "timed out" if self.timed_out else f"exit {self.returncode}"
        return (
            f"{status} after {self.seconds:.1f} s\n"
            f"--- stdout (tail) ---\n{self.stdout[-3000:]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-3000:]}"
        )


def run(launch: Launch, timeout: float) -> Finished:
    """Run a launch to completion in its own process group.

    The whole group is killed on timeout: the npm launchers spawn the real
    binary as a child, and Copilot's does not pass SIGTERM on, so killing
    only the direct child would leave the CLI running.
    """
    launch.prepare()
    started = time.monotonic()
    process = subprocess.Popen(
        launch.argv,
        env=launch.env,
        cwd=launch.cwd,
        stdin=subprocess.PIPE if launch.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timed_out = False
    try:
        stdout, stderr = process.communicate(launch.stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process.pid)
        stdout, stderr = process.communicate()
    finally:
        _kill_group(process.pid)  # stragglers of a run that did exit
    return Finished(process.returncode, stdout, stderr, time.monotonic() - started, timed_out)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
