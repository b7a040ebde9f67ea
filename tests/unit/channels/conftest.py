"""Keys of the mail providers the email tests sign with (real RSA keys, made once)."""

from __future__ import annotations

import pytest

from tests.servers.dkim import DkimKey


@pytest.fixture(scope="module")
def home() -> DkimKey:
    """The provider of Alice (and, in the forgery tests, of Mallory too)."""
    return DkimKey("home.test")


@pytest.fixture(scope="module")
def evil() -> DkimKey:
    """A domain the attacker holds."""
    return DkimKey("evil.test")
