"""Which part of a notify channel's Apprise URL holds a secret written out, as Apprise says.

``butler.toml`` is readable in every jail, so a secret written into a
channel's URL is a secret every session holds. Which parts of a URL are
secret is Apprise's own knowledge: each service's schema (a plugin's
``template_tokens`` and ``template_args``) marks the fields it holds private
(a Discord webhook's token, Slack's three tokens, a Pushover user key, a
password), and the plugin's own ``parse_url`` (``parse_native_url`` for a
service's own ``https://`` address) says which part of this URL fills each
field. So the check asks Apprise, service by service, rather than keeping a
list of URL forms that would miss the next service Apprise learns.

Apprise cannot type what its URLs carry free-form: HTTP headers
(``+Authorization=...``), query parameters it passes on (``-X-Api-Key=...``),
fields it adds to a payload (``:apikey=...``) and parameters it does not
know. Those count as secret when their name says so (an authorization, a
key, a token, a password, a cookie...). The path of a generic webhook
(``json://host/<path>``) is no field Apprise types either: a secret there
belongs in a placeholder, which nothing can check for the owner. And a topic
with no credential beside it, on a server others reach (``ntfy://mytopic``,
an open broker on the internet), is itself the secret: whoever knows an open
topic reads every message sent to it. (A broker on this machine or the home
network, ``mqtt://127.0.0.1/alerts``, is the owner's to guard.)

A field is written properly when it is ``{NAME}`` placeholders only (a
header's value may start with its scheme: ``Bearer {API_TOKEN}``); the value
comes from the credentials store when a message is sent.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

#: ``{NAME}`` in a channel's URL: a credential's name, as an environment variable is named.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,127})\}")
#: A free-form header or parameter whose name says it carries a credential.
CREDENTIAL_NAME = re.compile(
    r"auth|key|token|secret|pass|cookie|session|signature|credential|bearer", re.IGNORECASE
)
#: Names of hosts on this machine or a home network.
LOCAL_NAMES = (".localhost", ".local", ".lan", ".home.arpa", ".internal")
#: What may stand before the placeholders of a header's value: its scheme ("Bearer ").
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9-]* +")
#: A placeholder's stand-in (:func:`_stand_in`): a mark no one writes, and ten digits.
STAND_IN_MARK = "9081726354"
STAND_IN = re.compile(STAND_IN_MARK + r"[0-9]{10}")
#: Where Apprise's parse puts free-form headers, passed-on parameters and payload fields,
#: and their mark.
FREE_FORM = (("qsd+", "+", "header"), ("qsd-", "-", "parameter"), ("qsd:", ":", "payload field"))


class UnknownService(ValueError):
    """The URL names no service Apprise knows."""


@dataclass(frozen=True)
class Secret:
    """A secret written out in a channel's URL: what it is, and a name to store it by."""

    #: What it is, for the owner ("the webhook token", "the +Authorization= header").
    what: str
    #: A credential name the owner could keep it under (``DISCORD_WEBHOOK_TOKEN``).
    name: str


def literal_secret(url: str) -> Secret | None:
    """Which part of ``url`` holds a secret written out instead of a placeholder, if any.

    :class:`UnknownService` when Apprise knows no service of that URL.
    """
    try:
        plugin, fields = _parse(url)
    except UnknownService:
        # A service's own address may be read only with values where its placeholders
        # are (a Discord webhook's id is digits): read it so, the stand-ins counting as
        # placeholders.
        plugin, fields = _parse(PLACEHOLDER.sub(_stand_in, url))
    service = (fields or {}).get("schema") or url.split("://", 1)[0]
    for what, value in _secrets(plugin, fields):
        if not _placeholders_only(value, what.endswith("header")):
            return Secret(what, _credential_name(service, what))
    if _password(url):
        return Secret("the password", _credential_name(service, "password"))
    return None


def _credential_name(service: str, what: str) -> str:
    """``ntfy`` and "the topic (...)" -> ``NTFY_TOPIC``: a name for the owner to store it by."""
    words = re.findall(r"[A-Za-z0-9]+", what.split("(")[0].removeprefix("the "))
    words = [w for w in words if w.lower() not in ("header", "parameter")]
    return "_".join([service, *words]).upper()


def _parse(url: str) -> tuple[Any, dict[str, Any] | None]:
    """The Apprise plugin of ``url`` and the fields its parse found (None if it found none)."""
    manager = _manager()
    schema = url.split("://", 1)[0].lower()
    if schema in manager:
        plugin = manager[schema]
        return plugin, plugin.parse_url(url)
    for plugin in manager.plugins():
        fields = plugin.parse_native_url(url)
        if fields:
            return manager[fields["schema"]], fields
    raise UnknownService(f"no service Apprise knows is reached with '{schema}://'")


@functools.cache
def _manager() -> Any:
    """Apprise's plugins, imported (a third of a second) only by a butler with channels."""
    from apprise import NotificationManager

    return NotificationManager()


def _secrets(plugin: Any, fields: dict[str, Any] | None) -> Iterator[tuple[str, Any]]:
    """``(what it is, its value)`` of each part of the parsed URL that holds a secret."""
    if not fields:  # a URL Apprise cannot read yet (placeholders where it wants digits)
        return
    private: dict[str, str] = {}
    for key, label in _private_fields(plugin):
        private.setdefault(key, label)  # a token's own name before an argument's alias
    filled = bool(fields.get("user"))  # a login guards it
    for key, label in private.items():
        if fields.get(key):
            filled = True
            yield label, fields[key]
    for where, mark, kind in FREE_FORM:
        for name, value in (fields.get(where) or {}).items():
            if CREDENTIAL_NAME.search(name):
                yield f"the {mark}{name}= {kind}", value
    known = {name.lower() for name in plugin.template_args}
    for name, value in (fields.get("qsd") or {}).items():
        plain = name.lower()
        if plain[:1] not in "+-:" and plain not in known and CREDENTIAL_NAME.search(plain):
            yield f"the {name}= parameter", value
    if "topic" in plugin.template_tokens and not filled and _reachable_by_others(fields):
        yield "the topic (no credential guards it, so it is the secret)", fields.get("targets")


def _reachable_by_others(fields: dict[str, Any]) -> bool:
    """Whether the service's server is one others reach: its public one (the URL names
    a topic only: ``ntfy://mytopic``), or a host that is no loopback, private address
    or local name (a broker on this machine or at home is the owner's to guard)."""
    host = str(fields.get("host") or "").strip("[]").lower()
    targets = fields.get("targets") or []
    if not host or host in targets:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." in host and not host.endswith(LOCAL_NAMES)
    return not (address.is_loopback or address.is_private or address.is_link_local)


def _private_fields(plugin: Any) -> Iterator[tuple[str, str]]:
    """``(key of the parsed fields, what it is)`` of each field the plugin marks private."""
    tokens: dict[str, dict[str, Any]] = plugin.template_tokens
    for name, spec in tokens.items():
        if spec.get("private"):
            yield spec.get("map_to", name), f"the {str(spec.get('name', name)).lower()}"
    for name, spec in plugin.template_args.items():
        target = tokens.get(spec.get("alias_of", ""), spec)
        if target.get("private"):
            label = str(target.get("name", name)).lower()
            for key in dict.fromkeys((name, target.get("map_to", name))):
                yield key, f"the {label} ({name}=)"


def _stand_in(match: re.Match[str]) -> str:
    """What stands for a placeholder where a service's address wants a value: digits, which
    every field of such an address takes, and :data:`STAND_IN` finds again."""
    return f"{STAND_IN_MARK}{zlib.crc32(match.group(1).encode()):010d}"


def _placeholders_only(value: Any, header: bool = False) -> bool:
    """Whether ``value`` (a text or a list of them) is made of ``{NAME}`` placeholders."""
    if isinstance(value, list | tuple | set):
        return all(_placeholders_only(item, header) for item in value)
    text = unquote(str(value)).strip()
    if header:
        text = SCHEME.sub("", text, count=1)
    return STAND_IN.sub("", PLACEHOLDER.sub("", text)).strip() == ""


def _password(url: str) -> bool:
    """Whether ``user:password@`` holds a password written out (any service, marked or not)."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return False
    return bool(password) and not _placeholders_only(password)
