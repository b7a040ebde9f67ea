"""Setting channels up: mistakes in butler.toml or switchboard.toml are one clear line, and
``butler channels`` pairs, lists and unpairs from the command line."""

from __future__ import annotations

import asyncio

import pytest

from butler.channels.pairing import digest
from butler.config import load_config
from butler.config.switchboard import load_switchboard
from butler.errors import ConfigError
from butler.store.channel_senders import SenderStore
from tests.channels.conftest import write_roster
from tests.commands import butler
from tests.conftest import TEST_DSN
from tests.helpers import write_butler


def butler_with(roster, table: str):
    return write_butler(roster, "health", port=8555, extra=table)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        (
            '[butler.channels.telegram]\ntoken_credential = "123456:AAE-secret-token"\n',
            "expected the NAME of a credential",
        ),
        (
            '[butler.channels.telegram]\napi_url = "http://api.example.org"\n',
            "would send the bot's token in clear",
        ),
        (
            '[butler.channels.email]\naddress = "b@example.org"\nimap_host = "imap.example.org"\n'
            'smtp_host = "smtp.example.org"\nimap_security = "none"\n',
            "would send the password in clear",
        ),
        (
            '[butler.channels.matrix]\nhomeserver = "https://m.example.org"\nuser_id = "butler"\n',
            "expected a Matrix user id",
        ),
        ("[butler.channels.signal]\n", "unknown key 'signal'; expected one of: telegram"),
    ],
)
def test_a_channel_table_mistake_is_one_line_naming_the_key(roster, table, says):
    with pytest.raises(ConfigError) as refused:
        load_config(butler_with(roster, table))
    assert says in str(refused.value) and "\n" not in str(refused.value)
    assert "butler.toml" in str(refused.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[switchboard]\nhome = "nobody"\n', "switchboard.home: no butler named 'nobody'"),
        (
            '[switchboard]\nhome = "health"\n[[switchboard.rules]]\nbutler = "x"\n',
            "switchboard.rules[0].butler: no butler named 'x'",
        ),
        (
            '[switchboard]\nhome = "health"\n[[switchboard.rules]]\nbutler = "health"\n'
            'patterns = ["(unclosed"]\n',
            "is no regular expression",
        ),
        ("[switchboard]\n", "missing required key 'home'"),
    ],
)
def test_a_switchboard_mistake_is_one_line(roster, text, says):
    write_roster(roster, "s")
    (roster / "switchboard.toml").write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_switchboard(roster, ["general", "health"])
    assert says in str(refused.value) and "switchboard.toml" in str(refused.value)


@pytest.mark.slow
async def test_pair_list_and_unpair_from_the_command_line(roster, schema_name, db):
    folders = write_roster(roster, schema_name, {"health": "\n[butler.channels.telegram]\n"})
    url = ["--database-url", TEST_DSN]
    health = str(folders["health"])

    async def run(*args: str):
        return await asyncio.to_thread(butler, "channels", *args, *url)

    missing = await run("pair", "telegram", "-c", str(folders["general"]))
    assert missing.returncode == 2 and missing.stderr.startswith("butler: error: ")
    assert "no telegram channel here" in missing.stderr
    wrong = await run("pair", "signal", "-c", health)
    assert (
        wrong.returncode == 2
        and "expected one of telegram, matrix, email, slack, discord" in wrong.stderr
    )

    paired = await run("pair", "telegram", "-c", health)
    code = paired.stdout.strip()
    assert paired.returncode == 0 and len(code) == 11
    assert "no paired senders for health" in (await run("list", "-c", health)).stdout
    assert await SenderStore(db).redeem("telegram", digest(code), "1001", "Alice")
    listed = await run("list", "-c", health)
    assert "1001" in listed.stdout and "Alice" in listed.stdout
    assert "telegram: senders proven by their Telegram user id" in listed.stdout
    assert (await run("unpair", "telegram", "1001", "-c", health)).returncode == 0
    again = await run("unpair", "telegram", "1001", "-c", health)
    assert again.returncode == 2 and "no paired sender '1001'" in again.stderr


EMAIL = (
    '\n[butler.channels.email]\naddress = "butler@home.test"\nimap_host = "imap.home.test"\n'
    'smtp_host = "smtp.home.test"\n'
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("", "email: senders proven by a DKIM signature of their From domain\n"),
        (
            "accept_unauthenticated = true\n",
            "email: senders UNAUTHENTICATED: whoever the From line names",
        ),
    ],
)
def test_channels_list_says_how_email_senders_are_proven_or_that_they_are_not(
    roster, schema_name, extra, says
):
    folders = write_roster(roster, schema_name, {"health": EMAIL + extra})
    listed = butler("channels", "list", "-c", str(folders["health"]), "--database-url", TEST_DSN)
    assert listed.returncode == 0, listed.stderr
    assert says in listed.stdout
