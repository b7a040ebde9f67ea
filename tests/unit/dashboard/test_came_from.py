"""A routed session's page says where its message came from and links to the conversation."""

from __future__ import annotations

from butler.dashboard.detail import render_came_from

ROW = {"trigger_source": "route"}


def test_a_switchboard_session_links_to_the_conversation_on_the_keepers_dashboard():
    meta = {
        "channel": "telegram",
        "sender": "1001",
        "chat": "1001",
        "thread": "1001",
        "conversation_id": "c0ffee",
        "routed_by": "classifier",
        "conversation_url": "http://127.0.0.1:8101/conversations/c0ffee",
    }
    html = render_came_from(ROW, meta)
    assert "<dt>channel</dt><dd>telegram</dd>" in html
    assert "<dt>routed by</dt><dd>classifier</dd>" in html
    assert 'href="http://127.0.0.1:8101/conversations/c0ffee"' in html


def test_a_link_a_session_could_have_written_is_not_followed_and_other_sessions_show_none():
    meta = {"channel": "matrix", "conversation_id": "c0ffee", "conversation_url": "javascript:x"}
    assert 'href="/conversations/c0ffee"' in render_came_from(ROW, meta)
    assert render_came_from({"trigger_source": "schedule"}, meta) == ""
    assert render_came_from(ROW, {}) == ""
