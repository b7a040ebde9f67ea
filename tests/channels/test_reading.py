"""How a message is read: who it names, which rule it meets, what a classifier's answer
counts as, whether it is a pairing code, and how a reply is cut to a channel's size."""

from __future__ import annotations

import pytest

from butler.channels.attachments import looks_like
from butler.channels.pairing import code_in, digest, new_code
from butler.channels.routing import mention, new_conversation, parse_choice, rule_for
from butler.channels.text import one_line, split, utf16_units
from butler.config.switchboard import Rule

NAMES = ["general", "health"]


@pytest.mark.parametrize(
    ("text", "named", "rest"),
    [
        ("/health what is due?", "health", "what is due?"),
        ("/health@butler_test_bot what is due?", "health", "what is due?"),
        ("@health: what is due?", "health", "what is due?"),
        ("@Health, hi", "health", "hi"),
        ("/health", "health", ""),
        ("/healthy food", None, "/healthy food"),
        ("/weather today", None, "/weather today"),
        ("ask /health later", None, "ask /health later"),
    ],
)
def test_a_message_names_a_butler_only_at_its_start(text, named, rest):
    assert mention(text, NAMES) == (named, rest)


def test_new_starts_afresh_with_or_without_words_after_it():
    assert new_conversation("/new") == (True, "")
    assert new_conversation("/new@my_bot what now?") == (True, "what now?")
    assert new_conversation("/newt") == (False, "/newt")


def test_rules_match_whole_keywords_and_patterns_in_order():
    rules = [
        Rule(butler="health", keywords=["iron", "blood pressure"]),
        Rule(butler="general", patterns=[r"(?i)\bbuy\b"]),
    ]
    assert rule_for("Did I take my IRON?", rules) == "health"
    assert rule_for("what is my blood  pressure", rules) is None  # two spaces: not the phrase
    assert rule_for("environment", rules) is None  # "iron" inside a word does not count
    assert rule_for("please BUY milk", rules) == "general"
    assert rule_for("x" * 5000 + " iron", rules) is None  # only the start is looked at


@pytest.mark.parametrize(
    ("answer", "chosen"),
    [
        ("health", "health"),
        ("  Health.\n", "health"),
        ("unsure", None),
        ("health or general", None),
        ("root", None),
        ("Ignore that. The answer is: general", "general"),
    ],
)
def test_only_one_butler_name_in_a_classifiers_answer_counts(answer, chosen):
    assert parse_choice(answer, NAMES) == chosen


def test_a_code_is_read_as_typed_on_a_phone_and_stored_only_as_a_digest():
    code = new_code()
    assert len(code) == 11 and code[5] == "-"
    typed = code.lower().replace("-", "")
    assert code_in(typed) is not None and digest(code_in(typed)) == digest(code)
    assert code_in(f"/start {code}") == code and code_in(f"/pair@bot {code}") == code
    assert digest("ABCDE-0000O") == digest("abcde-00000")  # an O typed for a zero
    assert code_in(f"my code is {code}") is None
    assert code not in digest(code)


def test_a_reply_is_split_at_natural_breaks_within_the_limit_and_nothing_is_lost():
    text = "First paragraph.\n\n" + "Second one, longer. " * 30 + "\n" + "x" * 700
    pieces = split(text, 200)
    assert all(len(p) <= 200 for p in pieces)
    words = [p for p in pieces if "xxx" not in p]
    assert all(p.endswith(("paragraph.", "longer.")) for p in words)  # cut between sentences
    assert "".join(pieces).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace(
        "\n", ""
    )
    emoji = "🙂" * 3000  # two UTF-16 units each: Telegram counts those
    assert all(utf16_units(p) <= 4096 for p in split(emoji, 4096, utf16_units))
    assert "".join(split(emoji, 4096, utf16_units)) == emoji


def test_a_notice_is_one_bounded_line_without_control_characters():
    assert one_line("a\nb\x1b[31m\tc" + "d" * 400, 20) == "a b[31m c" + "d" * 10 + "…"


def test_an_attachment_must_look_like_the_type_it_claims():
    assert looks_like("image/png", b"\x89PNG\r\n\x1a\n....")
    assert not looks_like("image/png", b"MZ\x90\x00")  # a program calling itself a picture
    assert looks_like("text/plain", "Grüße".encode())
    assert not looks_like("text/plain", b"\xff\xfe\x00")
