"""Reading an attachment's bytes from a chat server, never more than a limit."""

from __future__ import annotations

import urllib.parse

import aiohttp

from butler.channels.base import ChannelError, TooLarge
from butler.config.channels import is_loopback

CHUNK = 64 * 1024


async def bounded(response: aiohttp.ClientResponse, limit: int, kind: str, channel: str) -> bytes:
    """The body of ``response``, read in chunks; :class:`TooLarge` once past ``limit`` bytes."""
    if response.status != 200:
        raise ChannelError(f"{channel}: the {kind} could not be fetched ({response.status})")
    if response.content_length is not None and response.content_length > limit:
        raise TooLarge(kind)
    data = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        data += chunk
        if len(data) > limit:
            raise TooLarge(kind)
    return bytes(data)


def secure(url: str) -> bool:
    """Whether ``url`` is https, or plain http to this machine (a test's server)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and is_loopback(parts.hostname or "")
