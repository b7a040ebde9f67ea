"""A jailed session that fails says what the jail's proxy saw, before the runtime's guess.

The runtime here is ``curl`` through the jail's proxy, as a CLI reaches its
model API: shown a failed tunnel, a CLI can only guess ("the proxy refused
the tunnel: check its credentials"), while the proxy knows the name did not
resolve, the host refused the connection, or the host is not allowed and
which setting allows it.
"""

from __future__ import annotations

import pytest

from butler.runtimes.base import RuntimeFailure
from tests.helpers import free_port
from tests.sandbox.session_path import run_jailed

pytestmark = pytest.mark.slow

PATH = "/usr/bin:/bin"


async def failure(tmp_path, url: str, env: dict[str, str], extra: str = "") -> str:
    """The error of a jailed session whose runtime fetches ``url`` and fails."""
    command = ["/usr/bin/curl", "-sS", "-f", "-m", "20", url]
    with pytest.raises(RuntimeFailure) as failed:
        await run_jailed(tmp_path, command, {"PATH": PATH, **env}, extra)
    message = str(failed.value)
    assert "\n" not in message
    return message


async def test_a_model_api_whose_name_does_not_resolve_is_named_as_a_dns_failure(tmp_path):
    # The model API the runtime is configured for: allowed, but it does not exist.
    api = "https://api.model.invalid"
    message = await failure(tmp_path, f"{api}/v1/messages", {"ANTHROPIC_BASE_URL": api})
    assert message.startswith("the jail's proxy saw: api.model.invalid:443: DNS lookup"), message
    assert "the runtime said: command exited with status" in message


async def test_an_allowed_host_that_refuses_the_connection_is_named(tmp_path):
    port = free_port()  # nothing listens there
    extra = f'\n[butler.sandbox]\nallow_hosts = ["127.0.0.2:{port}"]\n'
    message = await failure(tmp_path, f"http://127.0.0.2:{port}/", {}, extra)
    assert f"the jail's proxy saw: 127.0.0.2:{port}: connection refused" in message, message


async def test_a_host_not_allowed_names_the_setting_that_allows_it(tmp_path):
    message = await failure(tmp_path, "https://exfil.example/", {})
    assert "exfil.example refused: port 443 of exfil.example is not allowed" in message, message
    assert "[butler.sandbox] allow_hosts opens it" in message
