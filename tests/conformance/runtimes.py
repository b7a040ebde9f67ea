"""How each genuine runtime is configured as a butler against the fake model server.

Everything here goes through what a butler's owner writes: ``[butler.runtime]``
type, model, args and cli_path, the variables declared in ``[butler.env]``
(the daemon's environment holds their values), and files in the butler
folder. Nothing is passed to a CLI behind the daemon's back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.cli_recipes import RECIPES, Recipe

FAKE_KEY = "fake-model-key-4f1c9a2e"
#: Not "tester": other end-to-end tests look for leftover workspaces of that name.
BUTLER = "conformer"


def _codex_args(model_url: str) -> list[str]:
    provider = (
        f'{{name="fake", base_url="{model_url}/v1", '
        'wire_api="responses", env_key="FAKE_MODEL_KEY"}'
    )
    return ["-c", "model_provider=fake", "-c", f"model_providers.fake={provider}"]


#: The owner's OpenCode provider config, as it sits in the butler folder.
OPENCODE_PROVIDER = {
    "provider": {
        "fake": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": "{env:FAKE_MODEL_URL}/v1", "apiKey": "{env:FAKE_MODEL_KEY}"},
            "models": {"fake-model": {"name": "Fake model"}},
        }
    }
}

Planter = Callable[[Path, Path, str], list[Path]]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _json_servers(entry: dict) -> str:
    return json.dumps({"mcpServers": {"decoy": entry}})


def _claude_decoys(home: Path, folder: Path, url: str) -> list[Path]:
    servers = _json_servers({"type": "http", "url": url})
    return [
        _write(home / ".claude.json", servers),
        _write(home / ".claude" / ".claude.json", servers),
        _write(home / ".claude" / "settings.json", '{"enableAllProjectMcpServers": true}'),
        _write(folder / ".mcp.json", servers),
    ]


def _codex_decoys(home: Path, folder: Path, url: str) -> list[Path]:
    table = f'[mcp_servers.decoy]\nurl = "{url}"\ndefault_tools_approval_mode = "approve"\n'
    return [
        _write(home / ".codex" / "config.toml", table),
        _write(folder / ".codex" / "config.toml", table),
    ]


def _gemini_decoys(home: Path, folder: Path, url: str) -> list[Path]:
    servers = _json_servers({"httpUrl": url, "trust": True})
    return [
        _write(home / ".gemini" / "settings.json", servers),
        _write(folder / ".gemini" / "settings.json", servers),
    ]


def _opencode_decoys(home: Path, folder: Path, url: str) -> list[Path]:
    entry = {"type": "remote", "url": url, "enabled": True}
    owner = {**OPENCODE_PROVIDER, "mcp": {"decoy": entry}}
    user = json.dumps({"mcp": {"decoy": entry}})
    return [
        _write(home / ".config" / "opencode" / "opencode.json", user),
        _write(folder / "opencode.json", json.dumps(owner)),
    ]


def _copilot_decoys(home: Path, folder: Path, url: str) -> list[Path]:
    servers = _json_servers({"type": "http", "url": url, "tools": ["*"]})
    return [
        _write(home / ".copilot" / "mcp-config.json", servers),
        _write(folder / ".mcp.json", servers),
        _write(folder / ".github" / "mcp.json", servers),
    ]


@dataclass(frozen=True)
class RuntimeCase:
    """One runtime as a butler's owner would configure it for the fake model."""

    type: str
    recipe: Recipe
    model: str | None
    env: Callable[[str], dict[str, str]]
    """Declared variables and their values, from the fake model's URL."""
    plant_decoys: Planter
    """Put a decoy MCP server in every user and project config the CLI reads."""
    args: Callable[[str], list[str]] = lambda url: []
    """``[butler.runtime] args``, appended to the command line: each proves it gets there."""
    files: dict[str, str] = field(default_factory=dict)
    """Files of the butler folder."""

    @property
    def binary(self) -> Path:
        return self.recipe.binary


CASES: dict[str, RuntimeCase] = {
    "claude-code": RuntimeCase(
        type="claude-code",
        recipe=RECIPES["claude"],
        model=None,
        env=lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": FAKE_KEY},
        args=lambda url: ["--verbose"],
        plant_decoys=_claude_decoys,
    ),
    "codex": RuntimeCase(
        type="codex",
        recipe=RECIPES["codex"],
        model="fake-model",
        env=lambda url: {"FAKE_MODEL_KEY": FAKE_KEY},
        args=_codex_args,
        plant_decoys=_codex_decoys,
    ),
    "gemini": RuntimeCase(
        type="gemini",
        recipe=RECIPES["gemini"],
        model="fake-model",
        env=lambda url: {"GEMINI_API_KEY": FAKE_KEY, "GOOGLE_GEMINI_BASE_URL": url},
        args=lambda url: ["--screen-reader"],
        plant_decoys=_gemini_decoys,
    ),
    "opencode": RuntimeCase(
        type="opencode",
        recipe=RECIPES["opencode"],
        model="fake/fake-model",
        env=lambda url: {"FAKE_MODEL_URL": url, "FAKE_MODEL_KEY": FAKE_KEY},
        args=lambda url: ["--log-level", "WARN"],
        plant_decoys=_opencode_decoys,
        files={"opencode.json": json.dumps(OPENCODE_PROVIDER, indent=2)},
    ),
    "copilot": RuntimeCase(
        type="copilot",
        recipe=RECIPES["copilot"],
        model="fake-model",
        env=lambda url: {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
            # Copilot masks secret values in everything it prints: a key
            # that could occur in ordinary text would garble the stream.
            "COPILOT_PROVIDER_API_KEY": FAKE_KEY,
        },
        args=lambda url: ["--log-level", "error"],
        plant_decoys=_copilot_decoys,
    ),
}
