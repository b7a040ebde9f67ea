"""The built-in runtime types, as ``module:Class``: a table that imports nothing.

Apart from :mod:`butler.runtimes.registry` (which imports the adapters' base)
so that a command reading a butler folder plainly (:mod:`butler.essentials`) can
tell a built-in runtime type without importing any adapter.
"""

from __future__ import annotations

BUILT_IN: dict[str, str] = {
    "claude-code": "butler.runtimes.claude_code:ClaudeCodeAdapter",
    "codex": "butler.runtimes.terminals:CodexTerminalAdapter",
    "command": "butler.runtimes.command:CommandAdapter",
    "gemini": "butler.runtimes.terminals:GeminiTerminalAdapter",
    "opencode": "butler.runtimes.terminals:OpenCodeTerminalAdapter",
    "copilot": "butler.runtimes.terminals:CopilotTerminalAdapter",
}
