"""``[butler.channels.*]``: the chat apps a person reaches a butler from.

Each table (``telegram``, ``matrix``, ``email``, ``slack``, ``discord``) binds
one channel to this butler. Secrets are never written here: a key such as ``token_credential``
names an entry of the butler's credentials store (``butler credentials set
NAME``), and a value that looks like the secret itself is refused.
"""

from __future__ import annotations

import ipaddress
import re
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from butler.config.section import ENV_NAME_PATTERN, Section

#: What the daemon accepts as an attachment unless a channel's table says otherwise.
DEFAULT_ATTACHMENT_TYPES = (
    "image/jpeg",
    "image/png",
    "image/webp",
    "image/gif",
    "application/pdf",
    "text/plain",
    "text/csv",
    "text/markdown",
    "audio/ogg",
    "audio/mpeg",
    "audio/mp4",
)
MIME_PATTERN = re.compile(r"^[a-z]+/[a-z0-9.+-]{1,80}$")
CHANNEL_KINDS = ("telegram", "matrix", "email", "slack", "discord")


def credential_name(value: str) -> str:
    """``value`` when it names a credential; a ValueError that says why a secret is refused."""
    if not ENV_NAME_PATTERN.match(value) or len(value) > 128:
        raise ValueError(
            "expected the NAME of a credential (store its value with "
            "`butler credentials set NAME`), found something else; never put a secret in "
            "butler.toml"
        )
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (where a password in clear goes nowhere else)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ChannelSettings(Section):
    """What every channel shares: threads, limits on senders and attachments."""

    enabled: bool = True
    #: Messages within this many minutes of the last resume the same session.
    idle_minutes: int = Field(default=30, ge=1, le=60 * 24 * 30)
    #: A paired sender's messages per minute; the rest get one line and are dropped.
    max_messages_per_minute: int = Field(default=6, ge=1, le=600)
    #: Longest message text taken, in characters.
    max_message_chars: int = Field(default=8000, ge=100, le=100_000)
    max_attachment_bytes: int = Field(default=10 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    max_attachments: int = Field(default=4, ge=0, le=20)
    attachment_types: list[str] = Field(default_factory=lambda: list(DEFAULT_ATTACHMENT_TYPES))

    #: Which of the table's keys names the credential the channel logs in with.
    credential_key: ClassVar[str]

    @property
    def credential(self) -> str:
        """The name of the credential the channel logs in with."""
        return getattr(self, self.credential_key)

    @field_validator("attachment_types")
    @classmethod
    def _types(cls, values: list[str]) -> list[str]:
        for value in values:
            if not MIME_PATTERN.match(value):
                raise ValueError(f"expected media types like 'image/png', found {value!r}")
        return values


class BotChannelSettings(ChannelSettings):
    """A channel that logs in as a bot with one access token from the credentials store."""

    credential_key: ClassVar[str] = "token_credential"
    token_credential: str

    @field_validator("token_credential")
    @classmethod
    def _token(cls, value: str) -> str:
        return credential_name(value)


class TelegramSettings(BotChannelSettings):
    """``[butler.channels.telegram]``: a bot, by long polling (no public address needed)."""

    token_credential: str = "TELEGRAM_BOT_TOKEN"
    #: The Bot API server (a self-hosted one, or a test's).
    api_url: str = "https://api.telegram.org"
    poll_timeout_s: int = Field(default=30, ge=1, le=50)

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        return _http_url(value, "api_url")


class MatrixSettings(BotChannelSettings):
    """``[butler.channels.matrix]``: a bot user on a homeserver, in unencrypted rooms."""

    homeserver: str
    #: The bot's own user id, e.g. "@butler:example.org".
    user_id: str
    token_credential: str = "MATRIX_ACCESS_TOKEN"
    #: Rooms the bot joins when invited, at most; further invites are declined.
    max_rooms: int = Field(default=20, ge=1, le=500)
    #: Characters per message event; longer replies are split.
    max_reply_chars: int = Field(default=16000, ge=500, le=60000)

    @field_validator("homeserver")
    @classmethod
    def _homeserver(cls, value: str) -> str:
        return _http_url(value, "homeserver")

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, value: str) -> str:
        if not re.fullmatch(r"@[a-z0-9._=/+-]{1,200}:[A-Za-z0-9.:\[\]-]{1,200}", value):
            raise ValueError(
                f"expected a Matrix user id like '@butler:example.org', found {value!r}"
            )
        return value


#: How a connection is protected: TLS from the start, STARTTLS (SMTP only), or not at all
#: (loopback only).
Security = Literal["tls", "starttls", "none"]


class EmailSettings(ChannelSettings):
    """``[butler.channels.email]``: a mailbox read by IMAP IDLE, answered by SMTP."""

    #: The butler's own address: replies come from it, mail from it is never answered.
    address: str
    imap_host: str
    imap_port: int = Field(default=993, ge=1, le=65535)
    imap_security: Literal["tls", "none"] = "tls"
    smtp_host: str
    smtp_port: int = Field(default=587, ge=1, le=65535)
    smtp_security: Security = "starttls"
    #: The login of both servers; the address when not given.
    username: str | None = None
    credential_key: ClassVar[str] = "password_credential"
    password_credential: str = "EMAIL_PASSWORD"
    mailbox: str = Field(default="INBOX", min_length=1, max_length=200)
    #: The authserv-id of the provider's Authentication-Results header that must show
    #: DKIM or DMARC passing for the sender's domain; unset trusts the From line.
    verified_by: str | None = Field(default=None, max_length=200)
    #: An email thread is a conversation for a week unless told otherwise.
    idle_minutes: int = Field(default=60 * 24 * 7, ge=1, le=60 * 24 * 90)
    max_reply_chars: int = Field(default=100_000, ge=1000, le=1_000_000)

    @field_validator("password_credential")
    @classmethod
    def _password(cls, value: str) -> str:
        return credential_name(value)

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        if not re.fullmatch(r"[^@\s<>]{1,200}@[A-Za-z0-9.-]{1,200}", value):
            raise ValueError(f"expected an address like butler@example.org, found {value!r}")
        return value.lower()

    @model_validator(mode="after")
    def _no_password_in_clear(self) -> EmailSettings:
        for kind in ("imap", "smtp"):
            host, security = getattr(self, f"{kind}_host"), getattr(self, f"{kind}_security")
            if security == "none" and not is_loopback(host):
                raise ValueError(
                    f"{kind}_security = 'none' with {kind}_host {host!r} would send the "
                    "password in clear; expected 'tls' or 'starttls' (or a loopback host)"
                )
        return self


class SlackSettings(ChannelSettings):
    """``[butler.channels.slack]``: a Slack app over Socket Mode (no public address needed).

    Two tokens: the bot token (``xoxb-``) for the Web API, the app-level token
    (``xapp-``, scope ``connections:write``) for opening the Socket Mode connection.
    """

    credential_key: ClassVar[str] = "bot_token_credential"
    bot_token_credential: str = "SLACK_BOT_TOKEN"
    app_token_credential: str = "SLACK_APP_TOKEN"
    #: The Web API (a test's, or an Enterprise Grid gateway).
    api_url: str = "https://slack.com/api"
    #: Where Slack serves shared files; the bot token is sent to no other address.
    files_url: str = "https://files.slack.com"
    #: Characters per message; Slack truncates past 40 000 and advises 4000.
    max_reply_chars: int = Field(default=4000, ge=500, le=40_000)

    @field_validator("bot_token_credential", "app_token_credential")
    @classmethod
    def _tokens(cls, value: str) -> str:
        return credential_name(value)

    @field_validator("api_url", "files_url")
    @classmethod
    def _urls(cls, value: str, info: ValidationInfo) -> str:
        return _http_url(value, str(info.field_name))


class DiscordSettings(BotChannelSettings):
    """``[butler.channels.discord]``: a Discord bot over the Gateway (no public address needed)."""

    token_credential: str = "DISCORD_BOT_TOKEN"
    #: The REST API, with its version (a test's, or a proxy's).
    api_url: str = "https://discord.com/api/v10"
    #: Hosts attachments are fetched from; a link to anywhere else is not followed.
    attachment_hosts: list[str] = Field(
        default_factory=lambda: ["cdn.discordapp.com", "media.discordapp.net"], max_length=10
    )
    #: Ask for the privileged Message Content intent (switched on in the Developer
    #: Portal): the words of guild messages that do not mention the bot. Off, the bot
    #: still reads direct messages and messages that mention it or reply to it.
    message_content: bool = False

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        return _http_url(value, "api_url")

    @field_validator("attachment_hosts")
    @classmethod
    def _hosts(cls, values: list[str]) -> list[str]:
        for value in values:
            if not re.fullmatch(r"[A-Za-z0-9.-]{1,253}", value):
                raise ValueError(f"expected host names like 'cdn.discordapp.com', found {value!r}")
        return [value.lower() for value in values]


class ChannelsConfig(Section):
    """``[butler.channels]``: one optional table per kind of channel."""

    telegram: TelegramSettings | None = None
    matrix: MatrixSettings | None = None
    email: EmailSettings | None = None
    slack: SlackSettings | None = None
    discord: DiscordSettings | None = None

    def enabled(self) -> dict[str, ChannelSettings]:
        """The channels switched on, by kind."""
        found = {kind: getattr(self, kind) for kind in CHANNEL_KINDS}
        return {kind: table for kind, table in found.items() if table and table.enabled}


def _http_url(value: str, key: str) -> str:
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
        raise ValueError(f"expected an http(s) address like https://example.org, found {value!r}")
    if value.startswith("http://") and not is_loopback(value.split("/")[2].rsplit(":", 1)[0]):
        raise ValueError(
            f"{key}: plain http to {value!r} would send the bot's token in clear; "
            "expected https (or a loopback address)"
        )
    return value.rstrip("/")
