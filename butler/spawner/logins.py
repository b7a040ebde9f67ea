"""How each runtime's CLI authenticates: the variables that hold its model key, or a
login file in its home. Read by :mod:`.preflight` (is one there?) and
:mod:`.environment` (a chat sender's session gets these and no other credential)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Needs:
    """How one runtime authenticates: any one of ``keys``, or a login file in its home."""

    keys: tuple[str, ...]
    logins: tuple[str, ...]
    #: How a person logs the CLI in by hand instead.
    login_hint: str


NEEDS: dict[str, Needs] = {
    "claude-code": Needs(
        ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
        (".claude/.credentials.json",),
        "run `claude` with HOME set to it and /login",
    ),
    "codex": Needs(("OPENAI_API_KEY", "CODEX_API_KEY"), (".codex/auth.json",), "`codex login`"),
    "gemini": Needs(
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"), (".gemini/oauth_creds.json",), "`gemini`, then /auth"
    ),
    "opencode": Needs(
        ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
        (".local/share/opencode/auth.json",),
        "`opencode auth login`",
    ),
    "copilot": Needs(
        ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
        (".copilot/config.json",),
        "`copilot`, then /login",
    ),
}
