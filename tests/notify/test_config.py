"""[butler.notify] and the roster's shared/notify.toml, as a person writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from butler.config import load_config
from butler.errors import ConfigError
from tests.helpers import REPO, free_port, write_butler
from tests.notify.conftest import notify_table, schedule_table


def butler(roster: Path, extra: str) -> Path:
    return write_butler(roster, "tester", port=free_port(), extra=extra)


def test_channels_are_named_apprise_urls_with_placeholders(roster: Path):
    channels = {
        "phone": "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}",
        "both": ["mailtos://me:{MAIL_PASSWORD}@example.com", "ntfy://{NTFY_TOPIC}"],
    }
    extra = notify_table(channels, default="phone", quiet="22:00-07:00", timezone="Europe/Paris")
    notify = load_config(butler(roster, extra)).butler.notify
    assert notify.urls("phone") == ["tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}"]
    assert len(notify.urls("both")) == 2
    assert notify.default == ["phone"] and notify.quiet == "22:00-07:00"


@pytest.mark.parametrize(
    ("url", "part"),
    [
        ("mailtos://me:hunter2@example.com", "the password"),
        ("tgram://123456789:AAE-abcdefghijklmnop/1234", "the bot token"),
        ("ntfy://ntfy.sh/topic?token=tk_abcdef", "the token"),
        ("json://hooks.example/x?apikey=abc123", "the apikey= parameter"),
    ],
)
def test_a_secret_written_into_a_channel_url_is_refused_without_showing_it(
    roster: Path, url: str, part: str
):
    with pytest.raises(ConfigError) as refused:
        load_config(butler(roster, notify_table({"phone": url})))
    line = str(refused.value)
    assert f"found {part} written in the URL" in line
    assert "butler credentials set" in line
    secret = url.split("@")[0].split(":")[-1] if "@" in url else url.split("=")[-1]
    assert secret not in line


def test_the_roster_gives_every_butler_its_channels_and_a_butler_overrides_them(roster: Path):
    (roster / "shared" / "notify.toml").write_text(
        '[notify]\nquiet = "23:00-06:00"\ndefault = "phone"\n\n[notify.channels]\n'
        'phone = "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}"\n'
        'mail = "mailtos://me:{MAIL_PASSWORD}@example.com"\n'
    )
    mail = "mailtos://other:{OTHER_PASSWORD}@example.org"
    own = notify_table({"mail": mail}, quiet="21:00-08:00")
    notify = load_config(butler(roster, own)).butler.notify
    assert sorted(notify.channels) == ["mail", "phone"]
    assert notify.urls("mail") == [mail]
    assert notify.quiet == "21:00-08:00" and notify.default == ["phone"]
    plain = write_butler(roster, "plain", port=free_port())
    assert load_config(plain).butler.notify.quiet == "23:00-06:00"


def test_a_mistake_in_the_rosters_file_is_blamed_on_that_file(roster: Path):
    shared = roster / "shared" / "notify.toml"
    shared.write_text('[notify]\nquiet = "25:00-07:00"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(butler(roster, ""))
    assert str(refused.value) == (
        f"{shared}: notify.quiet: expected hours like '22:00-07:00' (start and end apart), "
        "found '25:00-07:00'"
    )


def test_a_schedule_naming_no_channel_of_the_butler_is_refused(roster: Path):
    extra = notify_table({"phone": "ntfy://{TOPIC}"}) + schedule_table(
        "digest", "Write the digest.", notify="always", notify_channel="mail"
    )
    with pytest.raises(ConfigError) as refused:
        load_config(butler(roster, extra))
    assert "schedule 'digest': notify_channel: found 'mail', which is no channel" in str(
        refused.value
    )
    assert "the channels are: phone" in str(refused.value)


def test_public_url_must_be_a_web_address(roster: Path):
    folder = butler(roster, "")
    toml = folder / "butler.toml"
    toml.write_text(toml.read_text().replace("[butler]\n", '[butler]\npublic_url = "x.example"\n'))
    with pytest.raises(ConfigError, match="public_url: expected the dashboard's address"):
        load_config(folder)


def test_the_health_butler_sends_its_daily_review_once_a_channel_exists(tmp_path: Path):
    import shutil

    roster = tmp_path / "roster"
    shutil.copytree(REPO / "roster" / "health", roster / "health")
    shutil.copytree(REPO / "roster" / "shared", roster / "shared")
    config = load_config(roster / "health")
    review = next(s for s in config.butler.schedule if s.name == "daily-review")
    assert (review.notify or config.butler.notify.schedules) == "always"
    assert config.butler.notify.channels == {}  # nothing to send through yet
    (roster / "shared" / "notify.toml").write_text(
        '[notify.channels]\nphone = "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}"\n'
    )
    assert list(load_config(roster / "health").butler.notify.channels) == ["phone"]
