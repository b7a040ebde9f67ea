"""``butler notify test``: per channel, delivered or the service's own error in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.fakes.telegram import TelegramAtItsAddress
from tests.helpers import free_port, write_butler
from tests.notify.conftest import notify_table
from tests.notify.credentials import store_credential
from tests.servers.mail import MailServer

pytestmark = pytest.mark.slow


def butler_notify(folder: Path, *args: str, env: dict[str, str] | None = None):
    environ = {**os.environ, "DATABASE_URL": TEST_DSN, **(env or {})}
    argv = [sys.executable, "-m", "butler.cli", "notify", "test", "-c", str(folder), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=120)


async def test_each_channel_says_delivered_or_why_not(
    roster: Path, schema_name: str, mail_server: MailServer, tmp_path: Path
):
    dead = free_port()
    channels = {
        "phone": "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}",
        "mail": mail_server.url("butler@example.test", "person@example.test"),
        "broken": f"json://127.0.0.1:{dead}/hook",
    }
    folder = write_butler(
        roster, "tester", port=free_port(), schema=schema_name, extra=notify_table(channels)
    )
    with TelegramAtItsAddress(tmp_path) as telegram:
        store_credential(folder, "TELEGRAM_BOT_TOKEN", telegram.token)
        store_credential(folder, "TELEGRAM_CHAT_ID", telegram.chat_id)
        everything = butler_notify(folder, env=telegram.env())
        only_phone = butler_notify(folder, "--channel", "phone", env=telegram.env())
        calls = await telegram.until(2)
    assert everything.returncode == 1, everything.stderr
    assert everything.stdout.splitlines() == [
        "broken  not delivered: JSON: A Connection error occurred sending JSON notification "
        "to 127.0.0.1.",
        "mail    delivered",
        "phone   delivered",
    ]
    assert (only_phone.returncode, only_phone.stdout) == (0, "phone  delivered\n")
    assert calls[0]["text"] == (
        "<b>tester: test</b>\r\nA test from the butler tester: this channel reaches you."
    )
    (mail,) = await mail_server.until(1)
    assert mail.subject == "tester: test"
    assert telegram.token not in everything.stdout + everything.stderr


async def test_a_wrong_token_shows_the_services_own_answer(
    roster: Path, schema_name: str, tmp_path: Path
):
    channels = {"phone": "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}"}
    folder = write_butler(
        roster, "tester", port=free_port(), schema=schema_name, extra=notify_table(channels)
    )
    with TelegramAtItsAddress(tmp_path) as telegram:
        wrong = telegram.token[:-3] + "xyz"
        store_credential(folder, "TELEGRAM_BOT_TOKEN", wrong)
        store_credential(folder, "TELEGRAM_CHAT_ID", telegram.chat_id)
        answer = butler_notify(folder, env=telegram.env())
    assert answer.returncode == 1
    # Every value from the credentials store is shown by its name, the chat id too.
    assert answer.stdout == (
        "phone  not delivered: Telegram: Failed to send Telegram notification to "
        "{TELEGRAM_CHAT_ID}: Unauthorized, error=401.\n"
    )
    assert wrong not in answer.stdout


def test_no_channel_or_an_unknown_one_is_one_line_naming_the_fix(roster: Path, schema_name: str):
    bare = write_butler(roster, "bare", port=free_port(), schema=schema_name)
    answer = butler_notify(bare)
    assert answer.returncode == 2
    assert answer.stderr == (
        "butler: error: bare has no channels; name one under [butler.notify.channels] in "
        f"{bare / 'butler.toml'} (see docs/notify.md)\n"
    )
    channels = notify_table({"mail": "mailto://127.0.0.1:1?to=a@b.example"})
    folder = write_butler(roster, "tester", port=free_port(), schema=schema_name, extra=channels)
    answer = butler_notify(folder, "--channel", "pager")
    assert answer.returncode == 2
    assert answer.stderr == (
        "butler: error: channel: no channel named 'pager'; the owner's channels are: mail\n"
    )


def test_a_channel_needing_no_stored_credential_is_tested_without_opening_the_database(
    roster: Path, webhook
):
    channels = {"hook": webhook.url("/ping")}
    folder = write_butler(roster, "tester", port=free_port(), extra=notify_table(channels))
    # A database that answers nobody: the test must not need it (an embedded one would be
    # started first, seconds of initdb and start-up, to read nothing).
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    done = butler_notify(folder, env={"DATABASE_URL": nowhere})
    assert (done.returncode, done.stdout) == (0, "hook  delivered\n"), done.stderr
    assert webhook.wait(1)[0]["title"] == "tester: test"
