"""The Slack and Discord tables of butler.toml: credentials by name, addresses checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from butler.config.channel_tables import ChannelsConfig
from butler.config.channels import DiscordSettings, SlackSettings


def test_slack_and_discord_tables_switch_their_channels_on_with_their_defaults():
    channels = ChannelsConfig.model_validate({"slack": {}, "discord": {"enabled": True}})
    enabled = channels.enabled()
    assert sorted(enabled) == ["discord", "slack"]
    assert enabled["slack"].credential == "SLACK_BOT_TOKEN"
    assert enabled["slack"].app_token_credential == "SLACK_APP_TOKEN"  # type: ignore[attr-defined]
    assert enabled["discord"].credential == "DISCORD_BOT_TOKEN"


@pytest.mark.parametrize(
    "table",
    [
        {"app_token_credential": "xapp-1-A0-123-abcdef"},
        {"bot_token_credential": "xoxb-1111-2222-abcd"},
    ],
)
def test_a_slack_token_written_where_its_name_belongs_is_refused(table):
    with pytest.raises(ValidationError, match=r"never put a secret in butler\.toml"):
        SlackSettings.model_validate(table)


def test_plain_http_to_another_machine_is_refused_for_slack_and_discord():
    with pytest.raises(ValidationError, match="in clear"):
        SlackSettings.model_validate({"api_url": "http://slack.example.org/api"})
    with pytest.raises(ValidationError, match="in clear"):
        DiscordSettings.model_validate({"api_url": "http://discord.example.org/api/v10"})


def test_discord_attachment_hosts_are_host_names_only():
    with pytest.raises(ValidationError, match="host names"):
        DiscordSettings.model_validate({"attachment_hosts": ["https://evil.example/"]})
    assert DiscordSettings.model_validate(
        {"attachment_hosts": ["CDN.Example"]}
    ).attachment_hosts == ["cdn.example"]
