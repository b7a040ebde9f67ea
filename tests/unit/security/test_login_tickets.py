"""A roster's login tickets, tried by someone who saw one (a browser's history, a proxy's
log): each logs in to the butler it was made for, once, and nowhere else.

In a roster started with one ``BUTLER_TOKEN`` for every butler (the compose file's
``.env``), each butler's key was the same: a ticket made for ``health`` and used
there logged in once more at ``general``, whose redeemed tickets are its own.
"""

from __future__ import annotations

import time
from pathlib import Path

from butler.security import login

SHARED = "one-token-for-the-whole-roster-0123456789"


def test_a_ticket_for_one_butler_is_refused_by_another_sharing_its_token(tmp_path: Path):
    for name in ("health", "general"):
        (tmp_path / name).mkdir()  # each butler's data folder
    health = login.Tickets(tmp_path / "health" / "login_tickets", audience="health")
    general = login.Tickets(tmp_path / "general" / "login_tickets", audience="general")
    ticket = login.mint_ticket(SHARED, "health")
    assert health.redeem(ticket, SHARED)
    assert not general.redeem(ticket, SHARED)
    assert not health.redeem(ticket, SHARED)
    assert general.redeem(login.mint_ticket(SHARED, "general"), SHARED)


def test_a_ticket_changed_in_any_part_is_refused_and_the_same_one_reworded_counts_once():
    now = time.time()
    expires, nonce, mac = login.mint_ticket(SHARED, "health", now).split(".")
    tickets = login.Tickets(audience="health", clock=lambda: now)
    for forged in (
        f"{int(expires) + 3600}.{nonce}.{mac}",
        f"{expires}.{nonce[::-1]}.{mac}",
        f"{expires}.{nonce}.{mac.upper()}",
        f"{expires}.{nonce}.{mac} ",
    ):
        assert not tickets.redeem(forged, SHARED), forged
    assert tickets.redeem(f"{expires}.{nonce}.{mac}", SHARED)
    # Its expiry written with a leading zero is the same ticket: its nonce is used.
    assert not tickets.redeem(f"0{expires}.{nonce}.{mac}", SHARED)


def test_a_ticket_made_by_a_clock_ahead_is_refused_past_the_lifetime_and_a_minute():
    """The roster page and the butler may read two clocks: a little skew is allowed, a
    ticket good for longer than its lifetime is not."""
    now = time.time()
    tickets = login.Tickets(audience="health", clock=lambda: now)
    assert tickets.redeem(login.mint_ticket(SHARED, "health", now + 50), SHARED)
    assert not tickets.redeem(login.mint_ticket(SHARED, "health", now + 120), SHARED)
    assert not tickets.redeem(login.mint_ticket(SHARED, "health", now - 601), SHARED)
