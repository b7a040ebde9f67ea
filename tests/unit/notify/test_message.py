"""What a message becomes before it is sent: bounded, one-line titles, quiet hours, channels."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

import pytest

from butler.config import NotifyConfig
from butler.notify import NotifyRefused
from butler.notify.channels import ChannelUnavailable, chosen, fill
from butler.notify.message import bounded, one_line
from butler.notify.quiet import QuietHours
from butler.store.credentials import CredentialStore


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_a_long_answer_is_cut_with_a_link_to_the_whole_of_it():
    body = "word " * 2000
    link = "https://butler.example/sessions/abc"
    sent = bounded(body, 500, link, "abc")
    assert len(sent) <= 500
    assert sent.startswith("word word")
    assert sent.endswith(f"more characters; the whole answer: {link})")
    assert bounded("short", 500, link, "abc") == "short"
    # Without a public address, the person is told where to look.
    assert "the whole answer is on the dashboard, session abc" in bounded(body, 500, None, "abc")


def test_a_title_is_one_line_so_it_cannot_add_an_email_header():
    assert one_line("Daily\r\nBcc: stranger@example.com", "health") == (
        "Daily Bcc: stranger@example.com"
    )
    assert one_line("  ", "health") == "health"
    assert len(one_line("x" * 500, "health")) == 200


def test_quiet_hours_over_midnight_hold_until_the_morning_in_the_butlers_zone():
    quiet = QuietHours.parse("22:00-07:00", "Europe/Paris")
    assert quiet is not None
    # 22:30 in Paris (winter, UTC+1) is quiet until 07:00 Paris = 06:00 UTC the next day.
    assert quiet.until(utc(2026, 1, 15, 21, 30)) == utc(2026, 1, 16, 6, 0)
    assert quiet.until(utc(2026, 1, 16, 5, 59)) == utc(2026, 1, 16, 6, 0)
    assert quiet.until(utc(2026, 1, 16, 6, 0)) is None
    assert quiet.until(utc(2026, 1, 15, 20, 59)) is None
    daytime = QuietHours.parse("12:00-14:00", "UTC")
    assert daytime is not None and daytime.until(utc(2026, 1, 15, 13, 0)) == utc(2026, 1, 15, 14)


def settings(**channels: str) -> NotifyConfig:
    return NotifyConfig(channels=channels)


@pytest.mark.parametrize(
    "asked",
    [
        "tgram://123456:abc/987",
        "json://attacker.example/collect",
        "stranger@example.com",
        "-1001234567890",
        "PHONE",
        "phone mail",
    ],
)
def test_a_channel_is_chosen_by_name_never_by_url_address_or_chat_id(asked: str):
    config = settings(phone="ntfy://{TOPIC}", mail="mailto://{HOST}")
    with pytest.raises(NotifyRefused) as refused:
        chosen(config, asked)
    line = str(refused.value)
    assert line == (
        "channel: expected the name of one of the owner's channels (mail, phone); "
        "a URL, an address or a chat id is never accepted"
    )


def test_an_unknown_name_is_refused_and_no_name_means_the_default_channels():
    config = settings(phone="ntfy://{TOPIC}", mail="mailto://{HOST}")
    with pytest.raises(NotifyRefused, match="no channel named 'pager'; the owner's channels"):
        chosen(config, "pager")
    assert chosen(config, None) == ["mail", "phone"]
    assert chosen(NotifyConfig(channels=config.channels, default=["phone"]), None) == ["phone"]
    with pytest.raises(NotifyRefused, match="has no channel to reach its person"):
        chosen(NotifyConfig(), None)


async def test_a_secret_is_filled_in_encoded_and_taken_out_of_error_lines_again():
    config = settings(hook="json://hooks.example/{HOOK_TOKEN}?to={WHO}")
    token = "s3cr/et@host?x"
    store = CredentialStore(None, {"HOOK_TOKEN": token, "WHO": "me"})
    channel = await fill(config, "hook", store)
    assert channel.urls == [f"json://hooks.example/{quote(token, safe='')}?to=me"]
    assert "s3cr" not in repr(channel)
    said = f"refused https://hooks.example/{quote(token, safe='')} and {token}"
    assert channel.redact(said) == "refused https://hooks.example/{HOOK_TOKEN} and {HOOK_TOKEN}"
    with pytest.raises(ChannelUnavailable) as missing:
        await fill(config, "hook", CredentialStore(None, {"WHO": "me"}))
    assert str(missing.value) == (
        "channel 'hook': no credential HOOK_TOKEN; store it with: "
        "butler credentials set HOOK_TOKEN --config <butler folder>"
    )
