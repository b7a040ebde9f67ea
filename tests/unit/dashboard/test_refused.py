"""The refused messages under the conversations: when, where, who, and why, escaped."""

from __future__ import annotations

from datetime import UTC, datetime

from butler.dashboard.conversations import render_refused


def test_a_refused_message_shows_its_sender_and_why_escaped_and_never_its_words():
    row = {
        "id": 7,
        "created_at": datetime(2026, 11, 27, 8, 0, tzinfo=UTC),
        "channel": "email",
        "sender": "<b>alice@home.test</b>",
        "reason": "sender not proven: it carries no DKIM signature (From home.test)",
    }
    html = render_refused([row])
    assert '<tr data-refused="7">' in html and "&lt;b&gt;alice@home.test&lt;/b&gt;" in html
    assert "sender not proven: it carries no DKIM signature (From home.test)" in html
    assert render_refused([]) == ""
