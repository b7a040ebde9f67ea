"""A secret written into a notify channel's URL is refused wherever Apprise's own schema of
the service marks the field private, and in the free-form parts Apprise cannot type
(headers, passed-on parameters, an open topic); placeholders pass."""

from __future__ import annotations

import pytest

from butler.config.notify import check_url
from butler.config.notify_secrets import literal_secret

WRITTEN_OUT = [
    # Before, each of these loaded silently into a butler.toml every jail can read.
    ("json://hooks.example/?+Authorization=Bearer%20sk-live-9f8e7d", "the +Authorization= header"),
    ("json://hooks.example/?-X-Api-Key=sk-live-9f8e7d", "the -X-Api-Key= parameter"),
    ("form://hooks.example/?+X-Token=sk-live-9f8e7d", "the +X-Token= header"),
    ("json://hooks.example/?:api_key=sk-live-9f8e7d", "the :api_key= payload field"),
    ("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js", "the webhook id"),
    ("discord://{DISCORD_ID}/JHMHI8qBe7bk2ZwO5U711o3dV_js", "the webhook token"),
    ("https://discord.com/api/webhooks/4174216298/JHMHI8qBe7bk2ZwO5U", "the webhook id"),
    ("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", "the token a"),
    ("slack://{A}/{B}/TIiajkdnlazkcOXrIdevi7FQ", "the token c"),
    ("pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@{PUSHOVER_TOKEN}", "the user key"),
    ("pover://{PUSHOVER_USER}@azGDORePK8gMaC0QOYAMyEEuzJnyUi", "the access token"),
    ("https://discord.com/api/webhooks/{DISCORD_ID}/JHMHI8qBe7bk2ZwO5U", "the webhook token"),
    ("pover://{PUSHOVER_USER}@{PUSHOVER_TOKEN}?key=EncKey42", "the encryption key (key=)"),
    ("ntfy://my-secret-topic-4711", "the topic"),
    ("ntfys://ntfy.example.com/my-secret-topic-4711", "the topic"),
    ("mqtts://broker.example.com/home/alerts", "the topic"),
    ("ntfy://ntfy.sh/topic?token=tk_abcdef", "the token"),
    ("tgram://123456789:AAE-abcdefghijklmnop/1234", "the bot token"),
    ("mailtos://me:hunter2@example.com", "the password"),
    ("json://hooks.example/x?apikey=abc123", "the apikey= parameter"),
]


@pytest.mark.parametrize(("url", "what"), WRITTEN_OUT)
def test_a_secret_written_out_is_found_and_named_without_its_value(url: str, what: str):
    found = literal_secret(url)
    assert found is not None and found.what.startswith(what), found
    with pytest.raises(ValueError) as refused:
        check_url(url)
    line = str(refused.value)
    assert f"found {found.what} written in the URL" in line
    assert f"butler credentials set {found.name}" in line and "\n" not in line
    for part in ("sk-live-9f8e7d", "JHMHI8qBe7bk2ZwO5U", "TIiajkdnlazkcOXrIdevi7FQ", "hunter2"):
        assert part not in line


@pytest.mark.parametrize(
    "url",
    [
        "json://hooks.example/?+Authorization=Bearer%20{HOOK_TOKEN}&-X-Api-Key={HOOK_KEY}",
        "json://hooks.example/?+Content-Type=application/json&:message=text",
        "discord://{DISCORD_ID}/{DISCORD_TOKEN}",
        "https://discord.com/api/webhooks/{DISCORD_ID}/{DISCORD_TOKEN}",
        "slack://{SLACK_A}/{SLACK_B}/{SLACK_C}/#general",
        "pover://{PUSHOVER_USER}@{PUSHOVER_TOKEN}",
        "ntfy://{NTFY_TOPIC}",
        "ntfy://me:{NTFY_PASSWORD}@ntfy.example.com/alerts",  # a login guards the topic
        "mqtt://127.0.0.1:1883/home/alerts",  # a broker on this machine: the owner's
        "ntfy://192.168.1.20/alerts",  # one at home
        "mqtt://broker.lan/alerts",
        "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}",
        "mailtos://me:{MAIL_PASSWORD}@example.com",
        "json://127.0.0.1:8080/hook",
    ],
)
def test_placeholders_and_what_is_no_secret_pass(url: str):
    assert literal_secret(url) is None
    assert check_url(url) == url


def test_a_url_of_no_service_apprise_knows_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^no service Apprise knows is reached with 'foo://'"):
        check_url("foo://example.com/x")
