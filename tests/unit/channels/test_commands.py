"""Chat commands: which messages are commands, and how their answers read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from butler.channels.chat_commands import OFFERED
from butler.channels.commands import (
    CHAT_COMMANDS,
    COMMANDS,
    Command,
    Failure,
    Status,
    butlers_text,
    chat_help,
    help_text,
    pair_text,
    parse,
    status_text,
    stop_text,
)


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/help", Command("help")),
        ("  /STATUS  ", Command("status")),
        ("/stop@our_home_butler_bot", Command("stop")),
        ("/new", Command("new")),
        (
            "/new what is due today?\nand tomorrow?",
            Command("new", "what is due today?\nand tomorrow?"),
        ),
    ],
)
def test_a_command_standing_alone_is_read(text, command):
    assert parse(text) == command


@pytest.mark.parametrize(
    "text",
    [
        "/help me word this letter",  # words after it: a message, never lost to a command
        "/stop the dryer at nine",
        "/health what is due?",  # a butler's name, for the channel to read
        "/tmp/notes is full, why?",
        "what does /status say?",
        "",
        "/",
    ],
)
def test_anything_else_is_a_message(text):
    assert parse(text) is None


def test_a_channel_offers_only_the_commands_it_has():
    assert parse("/status", {"help": "..."}) is None
    assert parse("/help", {"help": "..."}) == Command("help")


def test_help_says_who_answers_what_it_is_for_and_every_command():
    text = help_text("health", "Keeps the household's\nmedications.")
    assert text.startswith("health: Keeps the household's medications.")
    for name in COMMANDS:
        assert f"/{name} – " in text


def status(**changes) -> Status:
    base = dict(
        butler="health", answering=None, waiting=0, running=0, queued=0, slots=4, last_failure=None
    )
    return Status(**{**base, **changes})


def test_status_says_what_runs_here_what_waits_and_the_last_error():
    idle = status_text(status())
    assert idle.splitlines() == [
        "health: not answering anything in this conversation.",
        "Sessions: 0 running, 0 queued (at most 4 at once).",
        "Last error: none.",
    ]
    failure = Failure(
        "3f2a91c0-aaaa", datetime(2026, 5, 1, 10, 2, tzinfo=UTC), "timeout\nafter 600 s"
    )
    busy = status_text(
        status(answering="1b2c3d4e-ffff", waiting=2, running=3, queued=1, last_failure=failure)
    )
    assert busy.splitlines() == [
        "health: answering this conversation (session 1b2c3d4e); 2 more message(s) wait for it.",
        "Sessions: 3 running, 1 queued (at most 4 at once).",
        "Last error: session 3f2a91c0, 2026-05-01 10:02 UTC: timeout after 600 s",
    ]


def test_the_last_error_a_runtime_wrote_is_one_bounded_line():
    failure = Failure("s", None, "x" * 5000 + "\n\x1b[31mred")
    line = status_text(status(last_failure=failure)).splitlines()[-1]
    assert len(line) < 260 and line.endswith("…") and "when unknown" in line
    assert "\x1b" not in line


def test_stop_says_whether_there_was_anything_to_stop():
    assert stop_text(True).startswith("Stopped")
    assert stop_text(False).startswith("Nothing to stop")


BUTLERS = {"general": "Errands.", "health": "Medications."}


def test_a_chat_app_reads_pair_with_its_code_and_start_but_not_pair_in_a_sentence():
    assert parse("/pair K7Q2M-9XHDA", OFFERED) == Command("pair", "K7Q2M-9XHDA")
    assert parse("/start", OFFERED) == Command("start")
    assert parse("/butlers", OFFERED) == Command("butlers")
    assert parse("/butlers please", OFFERED) is None
    assert parse("/pair", COMMANDS) is None  # the web chat pairs nobody


def test_butlers_lists_each_with_what_it_is_for_and_marks_the_conversations():
    text = butlers_text(BUTLERS, "health")
    assert text.splitlines()[:3] == [
        "Butlers that answer here:",
        "/general – Errands.",
        "/health (this conversation's) – Medications.",
    ]
    assert (
        butlers_text({"health": "Medications."}, None) == "Only health answers here: Medications."
    )


def test_help_on_a_chat_app_is_the_conversations_butler_or_the_whole_roster():
    assert chat_help(BUTLERS, "health").startswith("health: Medications.")
    roster = chat_help(BUTLERS, None)
    assert roster.startswith("Butlers that answer here:")
    assert all(f"/{name} – " in roster for name in CHAT_COMMANDS)


def test_pair_says_whether_the_new_code_was_good():
    assert pair_text(True) == "Paired again with the new code."
    assert pair_text(False).startswith("That code is not good")
    assert pair_text(None).startswith("Send /pair followed by the code")
