"""What the JSON-lines runtimes share: error lines from stderr, garbage on stdout."""

from __future__ import annotations

from butler.runtimes.events import as_int, bare_name
from butler.runtimes.jsonl import exit_message, stderr_summary


def test_the_error_line_wins_over_usage_hints_and_colours() -> None:
    copilot = (
        "Error: No session, task, or name matched 'abc'.\n\n"
        "To resume by session or task ID:  copilot --resume=<id>\n"
        "To start a new session with ID:   copilot --session-id=<valid-uuid>\n"
    )
    assert stderr_summary(copilot) == "Error: No session, task, or name matched 'abc'."
    opencode = "\x1b[91m\x1b[1mError: \x1b[0mSession not found\n"
    expected = "opencode exited with status 1: Error: Session not found"
    assert exit_message("opencode", 1, opencode) == expected


def test_without_an_error_line_the_last_lines_are_kept() -> None:
    assert stderr_summary("one\n\ntwo\nthree\nfour\n") == "two | three | four"
    assert exit_message("gemini", 2, "") == "gemini exited with status 2"


def test_a_crashed_runtime_is_named_by_its_signal_seen_directly_or_through_the_jail() -> None:
    # Unjailed, the daemon is the parent and sees -N; jailed, bubblewrap reports 128 + N.
    direct = exit_message("opencode", -4, "")
    assert direct == "opencode exited with status -4 (killed by signal SIGILL)"
    jailed = exit_message("opencode", 132, "")
    assert jailed == "opencode exited with status 132 (128 + 4: killed by signal SIGILL)"
    # A CLI's own status past 128 that is no signal's stays a bare status.
    assert exit_message("codex", 255, "") == "codex exited with status 255"


def test_small_helpers_tolerate_what_json_throws_at_them() -> None:
    assert as_int(None) == 0 and as_int("12") == 12 and as_int({"x": 1}) == 0
    assert bare_name("mcp_health_state_set", "mcp_health_") == "state_set"
    assert bare_name("run_shell_command", "mcp_health_") == "run_shell_command"
