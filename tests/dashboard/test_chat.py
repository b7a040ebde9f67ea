"""The web chat in a real headless Chromium, on a phone's screen and a desktop's.

The butler's runtime (``chat_agent.py``) writes its answer in two parts and
waits on a FIFO between them, so the first part is on the page while the
session still runs. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.conftest import (
    ARTIFACTS,
    CHAT_DESCRIPTION,
    CHROMIUM,
    CHROMIUM_FLAGS,
    launched,
    logged_in,
)
from tests.helpers import TEST_TOKEN, wait_until

pytestmark = pytest.mark.slow

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
LIVE_MS = 20_000


@pytest.fixture
def chat_browser(chat_butler) -> Iterator[Any]:
    """Chromium for the chat butler (set up after it: see conftest's ``chromium``)."""
    with launched() as found:
        yield found


def send(page: Any, text: str) -> None:
    page.fill("#text", text)
    page.click("#send")


def answers(page: Any) -> Any:
    return page.locator("#messages li.theirs")


def test_on_a_phone_the_answer_streams_in_and_the_conversation_goes_on_with_a_file(
    chat_butler, chat_browser
):
    hold = chat_butler.hold("hold-1")
    page = logged_in(chat_browser, chat_butler.url, **PHONE)
    page.goto(f"{chat_butler.url}/chat/")
    assert page.locator("#empty").is_visible()
    send(page, f"What is due today? WAIT:{hold}")

    # The first words are on the page while the session still runs.
    writing = answers(page).first
    writing.locator(".bubble", has_text="Let me look into that.").wait_for(timeout=LIVE_MS)
    assert "writing" in (writing.get_attribute("class") or "")
    assert page.locator("#state").inner_text() == "writing…"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-phone-writing.png"))
    running = chat_butler.sql("SELECT status FROM sessions")
    assert [r["status"] for r in running] == ["running"]
    # A page opened again (a phone's browser reloads a tab it had put away) takes the
    # answer up again as it stands.
    page.reload()
    writing = answers(page).first
    writing.locator(".bubble", has_text="Let me look into that.").wait_for(timeout=LIVE_MS)
    assert "writing" in (writing.get_attribute("class") or "")

    chat_butler.release(hold)
    page.locator('#messages li.theirs[data-state="done"]').wait_for(timeout=LIVE_MS)
    first = answers(page).first.locator(".bubble").inner_text()
    assert first == "Let me look into that.\nYou asked: What is due today?"
    assert answers(page).first.get_attribute("data-streamed") == "true"
    conversation = re.search(r"[?&]c=([0-9a-f-]{36})", page.url)[1]

    # A follow-up goes on in the same conversation: the session is shown what came before.
    send(page, "And tomorrow?")
    answers(page).nth(1).locator(".bubble", has_text="Earlier you asked").wait_for(timeout=LIVE_MS)
    assert "Earlier you asked: What is due today?" in answers(page).nth(1).inner_text()

    # A file goes with a message into the session's workspace.
    note = b"Take the iron with orange juice.\n"
    page.set_input_files("#files", {"name": "note.txt", "mimeType": "text/plain", "buffer": note})
    assert "note.txt" in page.locator("#chosen").inner_text()
    send(page, "Read this, please.")
    third = answers(page).nth(2)
    third.locator(".bubble", has_text="In attachment-1.txt").wait_for(timeout=LIVE_MS)
    assert "In attachment-1.txt: Take the iron with orange juice." in third.inner_text()
    assert re.search(r"[?&]c=([0-9a-f-]{36})", page.url)[1] == conversation
    page.locator('#messages li.theirs[data-state="done"]').nth(2).wait_for(timeout=LIVE_MS)
    page.screenshot(path=str(ARTIFACTS / "chat-phone.png"))

    # The conversations' drawer lists it once; a reload shows it as recorded.
    page.click("#show-threads")
    page.locator("#thread-list button").first.wait_for()
    assert page.locator("#thread-list button").count() == 1
    page.screenshot(path=str(ARTIFACTS / "chat-phone-conversations.png"), animations="disabled")
    page.reload()
    page.locator('#messages li.theirs[data-state="done"]').nth(2).wait_for(timeout=LIVE_MS)
    assert "Read this, please." in page.locator("#messages").inner_text()
    assert "sent as 'note.txt'" in page.locator("#messages li.mine .attached").inner_text()

    # Recorded as a conversation like any channel's, each session through the spawner.
    rows = chat_butler.sql("SELECT channel, sender, butler FROM conversations")
    assert [dict(r) for r in rows] == [{"channel": "web", "sender": "owner", "butler": "health"}]
    sessions = chat_butler.sql(
        "SELECT trigger_source, type, status, metadata FROM sessions ORDER BY created_at"
    )
    assert [(s["trigger_source"], s["type"], s["status"]) for s in sessions] == [
        ("route", "channel", "succeeded")
    ] * 3
    metadata = [json.loads(s["metadata"]) for s in sessions]
    assert {m["conversation_id"] for m in metadata} == {conversation}
    assert {(m["channel"], m["sender"]) for m in metadata} == {("web", "owner")}
    page.goto(f"{chat_butler.url}/conversations")  # the dashboard's page of every channel's
    row = page.locator(f'tr[data-conversation="{conversation}"]').inner_text()
    assert "web" in row and "owner" in row and "health" in row
    page.close()


def test_commands_stop_and_new_conversations_on_a_desktop(chat_butler, chat_browser):
    page = logged_in(chat_browser, chat_butler.url, **DESKTOP)
    page.goto(f"{chat_butler.url}/chat/")

    send(page, "/help")
    note = page.locator("#messages li.note").last
    note.wait_for(timeout=LIVE_MS)
    assert CHAT_DESCRIPTION in note.inner_text() and "/stop" in note.inner_text()

    hold = chat_butler.hold("hold-2")
    send(page, f"Plan the week WAIT:{hold}")
    answers(page).filter(has_text="Let me look into that.").wait_for(timeout=LIVE_MS)
    send(page, "/status")
    status = page.locator("#messages li.note").last
    status.locator(".bubble", has_text="answering this conversation").wait_for(timeout=LIVE_MS)
    assert "1 running, 0 queued (at most 2 at once)" in status.inner_text()

    page.click("#stop")  # the button while an answer is written: it sends /stop
    page.locator("#messages li.note .bubble", has_text="Stopped").wait_for(timeout=LIVE_MS)
    stopped = page.locator("#messages li.theirs.failed")
    stopped.wait_for(timeout=LIVE_MS)
    assert "stopped with /stop" in stopped.inner_text()
    wait_until(lambda: chat_butler.sql("SELECT status FROM sessions")[0]["status"] == "cancelled")
    first = re.search(r"[?&]c=([0-9a-f-]{36})", page.url)[1]

    # Everything anyone wrote is shown as text, never as markup.
    hostile = "<img src=x onerror=window.pwned=1><b>bold</b>"
    send(page, hostile)
    answers(page).filter(has_text=f"You asked: {hostile}").wait_for(timeout=LIVE_MS)
    assert page.evaluate("window.pwned") is None
    assert page.locator("#messages img, #messages b").count() == 0
    page.screenshot(path=str(ARTIFACTS / "chat-desktop.png"))

    send(page, "/new")
    # Not "New conversation" alone: /help's note says "start a new conversation" too.
    page.locator("#messages li.note", has_text="New conversation: the next message").wait_for(
        timeout=LIVE_MS
    )
    assert "c=" not in page.url and page.locator("#messages li.theirs.answer").count() == 0
    send(page, "A second conversation")
    answers(page).filter(has_text="You asked: A second conversation").wait_for(timeout=LIVE_MS)
    second = re.search(r"[?&]c=([0-9a-f-]{36})", page.url)[1]
    assert second != first
    page.locator("#thread-list button").nth(1).wait_for(timeout=LIVE_MS)

    # An earlier conversation, picked from the list, opens as it was and goes on.
    page.click(f'#thread-list button[data-conversation="{first}"]')
    page.locator("#messages li.mine", has_text="Plan the week").wait_for(timeout=LIVE_MS)
    send(page, "Back to the week")
    done = answers(page).filter(has_text="You asked: Back to the week")
    done.and_(page.locator('[data-state="done"]')).wait_for(timeout=LIVE_MS)
    assert "Earlier you asked: Plan the week" in done.inner_text()
    assert re.search(r"[?&]c=([0-9a-f-]{36})", page.url)[1] == first
    page.screenshot(path=str(ARTIFACTS / "chat-desktop-continued.png"))
    page.close()


SHELL = [
    "/chat/chat.css",
    "/chat/chat.js",
    "/chat/icon-192.png",
    "/chat/icon.svg",
    "/chat/offline.html",
]
CACHED = """async () => {
  const kept = [];
  for (const name of await caches.keys()) {
    const cache = await caches.open(name);
    for (const request of await cache.keys()) kept.push(new URL(request.url).pathname);
  }
  return kept.sort();
}"""


@contextlib.contextmanager
def installed_profile(folder: Path) -> Iterator[Any]:
    """Chromium with a profile on disk: a private window's profile cannot install an app."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(folder), executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, **PHONE
        )
        try:
            yield context
        finally:
            context.close()


def test_the_chat_installs_as_an_app_that_keeps_only_its_shell(chat_butler, tmp_path):
    with installed_profile(tmp_path / "profile") as context:
        page = context.new_page()
        page.goto(f"{chat_butler.url}/?token={TEST_TOKEN}")
        page.goto(f"{chat_butler.url}/chat/")
        assert page.evaluate("navigator.serviceWorker.ready.then(r => r.scope)").endswith("/chat/")
        browser_side = context.new_cdp_session(page)
        assert browser_side.send("Page.getInstallabilityErrors")["installabilityErrors"] == []
        manifest = json.loads(browser_side.send("Page.getAppManifest")["data"])
        assert manifest["start_url"] == "/chat/" and manifest["short_name"] == "health"

        page.reload()  # now the service worker answers the page's requests
        assert page.evaluate("navigator.serviceWorker.controller !== null")
        send(page, "Remember the dentist at 15:30.")
        page.locator('#messages li.theirs[data-state="done"]').wait_for(timeout=LIVE_MS)
        page.reload()
        page.locator('#messages li.theirs[data-state="done"]').wait_for(timeout=LIVE_MS)
        # Only the shell is kept: no page (it holds the form token), answer or conversation.
        assert page.evaluate(CACHED) == SHELL

        context.set_offline(True)
        page.goto(f"{chat_butler.url}/chat/")
        assert "cannot be reached" in page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / "chat-phone-offline.png"))
