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
    #: A sender's messages per minute; a paired sender's burst past it waits its turn.
    max_messages_per_minute: int = Field(default=6, ge=1, le=600)
    #: Longest message text taken, in characters.
    max_message_chars: int = Field(default=8000, ge=100, le=100_000)
    max_attachment_bytes: int = Field(default=10 * 1024 * 1024, ge=1024, le=100 * 1024 * 1024)
    max_attachments: int = Field(default=4, ge=0, le=20)
    attachment_types: list[str] = Field(default_factory=lambda: list(DEFAULT_ATTACHMENT_TYPES))
    #: An OpenAI-compatible speech-to-text API (``https://api.openai.com/v1``, or a local
    #: server speaking the same): voice notes and audio are transcribed through it.
    transcribe_url: str | None = None
    transcribe_model: str = Field(default="whisper-1", min_length=1, max_length=100)
    #: The name of the credential holding its API key.
    transcribe_credential: str = "TRANSCRIBE_API_KEY"

    #: Which of the table's keys names the credential the channel logs in with.
    credential_key: ClassVar[str]

    @property
    def credential(self) -> str:
        """The name of the credential the channel logs in with."""
        return getattr(self, self.credential_key)

    def allows_group(self, chat: str) -> bool:
        """Whether the bot may take part in the group or room ``chat`` (none by default)."""
        return False

    def proof(self) -> str:
        """How this channel's senders are proven, for ``butler channels list``."""
        return "proven by the platform's user id"

    @field_validator("transcribe_url")
    @classmethod
    def _transcribe_url(cls, value: str | None) -> str | None:
        return None if value is None else _http_url(value, "transcribe_url")

    @field_validator("transcribe_credential")
    @classmethod
    def _transcribe_credential(cls, value: str) -> str:
        return credential_name(value)

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
    #: Groups (chat ids, e.g. -1001234567890) the bot may sit in; it leaves any other.
    groups: list[int] = Field(default_factory=list, max_length=500)

    def allows_group(self, chat: str) -> bool:
        return chat.lstrip("-").isdigit() and int(chat) in self.groups

    def proof(self) -> str:
        return "proven by their Telegram user id"

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
    #: Rooms the bot joins when a paired sender invites it (or a room on ``groups``), at
    #: most; further invites are declined.
    max_rooms: int = Field(default=20, ge=1, le=500)
    #: Rooms of unpaired inviters the bot sits in at once, so a stranger can pair with a
    #: code; they never count against ``max_rooms``, and more such invites are declined.
    max_stranger_rooms: int = Field(default=3, ge=0, le=50)
    #: How long the bot stays in a stranger's room where nobody paired, in minutes.
    stranger_room_minutes: float = Field(default=60.0, gt=0, le=10080)
    #: Characters per message event; longer replies are split.
    max_reply_chars: int = Field(default=16000, ge=500, le=60000)
    #: Rooms of more than the bot and one person (room ids, e.g. "!abc:example.org") the
    #: bot may sit in; it leaves any other such room.
    groups: list[str] = Field(default_factory=list, max_length=500)

    def allows_group(self, chat: str) -> bool:
        return chat in self.groups

    def proof(self) -> str:
        return "proven by their Matrix user id"

    @field_validator("groups")
    @classmethod
    def _groups(cls, values: list[str]) -> list[str]:
        for value in values:
            # Room version 12 names a room by a hash alone: "!abc..." without ":server".
            if not re.fullmatch(r"![A-Za-z0-9._=/+-]{1,255}(:[A-Za-z0-9.:\[\]-]{1,200})?", value):
                raise ValueError(
                    f"expected Matrix room ids like '!abc:example.org', found {value[:80]!r}"
                )
        return values

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
    #: The authserv-id of a receiving server whose verdict is trusted as well: its topmost
    #: Authentication-Results header, when it shows DKIM or DMARC passing for the From
    #: domain and no failure, proves a sender the butler's own DKIM check could not.
    verified_by: str | None = Field(default=None, max_length=200)
    #: Where DKIM keys and DMARC records are looked up: a resolver's address (``IP`` or
    #: ``IP:PORT``, e.g. a validating resolver on this machine); unset, the system's.
    resolver: str | None = Field(default=None, max_length=60)
    #: Take mail whose sender is not proven (the From line alone names a paired sender):
    #: anyone can write any From line, so only an owner who means it sets this.
    accept_unauthenticated: bool = False
    #: An email thread is a conversation for a week unless told otherwise.
    idle_minutes: int = Field(default=60 * 24 * 7, ge=1, le=60 * 24 * 90)
    max_reply_chars: int = Field(default=100_000, ge=1000, le=1_000_000)

    @field_validator("password_credential")
    @classmethod
    def _password(cls, value: str) -> str:
        return credential_name(value)

    @field_validator("resolver")
    @classmethod
    def _resolver(cls, value: str | None) -> str | None:
        if value is not None:
            resolver_address(value)
        return value

    def proof(self) -> str:
        if self.accept_unauthenticated:
            return "UNAUTHENTICATED: whoever the From line names (accept_unauthenticated = true)"
        trusted = f", or {self.verified_by}'s verdict" if self.verified_by else ""
        return f"proven by a DKIM signature of their From domain{trusted}"

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
    #: Channels (ids, e.g. "C0123ABCD") where the app answers who mentions it.
    groups: list[str] = Field(default_factory=list, max_length=500)

    def allows_group(self, chat: str) -> bool:
        return chat in self.groups

    def proof(self) -> str:
        return "proven by their Slack user id"

    @field_validator("groups")
    @classmethod
    def _groups(cls, values: list[str]) -> list[str]:
        for value in values:
            if not re.fullmatch(r"[CG][A-Z0-9]{2,40}", value):
                raise ValueError(f"expected Slack channel ids like 'C0123ABCD', found {value!r}")
        return values

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
    #: Server channels (ids, e.g. "123456789012345678"; a thread counts as its channel)
    #: where the bot answers who mentions it or replies to it.
    groups: list[str] = Field(default_factory=list, max_length=500)

    def allows_group(self, chat: str) -> bool:
        return chat in self.groups

    def proof(self) -> str:
        return "proven by their Discord user id"

    @field_validator("groups", mode="before")
    @classmethod
    def _groups(cls, values: object) -> object:
        # A channel id copied from Discord is a number; TOML takes it as one.
        if isinstance(values, list):
            values = [str(v) if isinstance(v, int) else v for v in values]
            for value in values:
                if not isinstance(value, str) or not re.fullmatch(r"[0-9]{5,25}", value):
                    raise ValueError(
                        f"expected Discord channel ids like 123456789012345678, found {value!r}"
                    )
        return values

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


def resolver_address(value: str) -> tuple[str, int]:
    """``IP``, ``IP:PORT`` or ``[IPv6]:PORT`` as an address and a port (53 when not given)."""
    host, port = value, "53"
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest.removeprefix(":") or "53"
    elif value.count(":") == 1:
        host, port = value.split(":")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(
            f"expected a resolver's address like '127.0.0.1' or '127.0.0.1:5353', found {value!r}"
        )
    return str(address), int(port)


def _http_url(value: str, key: str) -> str:
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
        raise ValueError(f"expected an http(s) address like https://example.org, found {value!r}")
    if value.startswith("http://") and not is_loopback(value.split("/")[2].rsplit(":", 1)[0]):
        raise ValueError(
            f"{key}: plain http to {value!r} would send the bot's token in clear; "
            "expected https (or a loopback address)"
        )
    return value.rstrip("/")
