"""The per-sender rate: how long a message over it waits for its turn."""

from __future__ import annotations

from butler.channels.limits import RateLimit


def test_a_message_over_the_rate_waits_until_the_oldest_leaves_the_minute():
    now = [1000.0]
    rate = RateLimit(2, clock=lambda: now[0])
    assert rate.wait("alice") == 0.0
    now[0] += 10
    assert rate.wait("alice") == 0.0
    assert rate.wait("alice") == 50.0  # the first left the minute at 1060
    assert rate.wait("bob") == 0.0  # each sender has a rate of their own
    now[0] += 50
    assert rate.wait("alice") == 0.0
