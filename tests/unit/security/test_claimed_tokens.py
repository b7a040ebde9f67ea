"""A worker's session token, minted at its claim: the daemon knows only its digest (on
the claimed row) and honours the token from its first use until the session ends."""

from __future__ import annotations

from butler.security.session_tokens import SessionTokens, digest_hex


async def test_a_token_minted_at_a_claim_is_honoured_by_its_digest_until_revoked():
    tokens, asked = SessionTokens(), []
    claimed = {digest_hex("minted-by-worker"): "s1"}

    async def lookup(digest: str) -> str | None:
        asked.append(digest)
        return claimed.get(digest)

    tokens.lookup = lookup
    assert await tokens.resolve_claimed("minted-by-worker") == "s1"
    assert asked == [digest_hex("minted-by-worker")]  # only the digest is looked up
    assert tokens.resolve("minted-by-worker") == "s1"  # known from then on
    assert await tokens.resolve_claimed("another") is None
    tokens.revoke("s1")
    del claimed[digest_hex("minted-by-worker")]  # the row closed
    assert await tokens.resolve_claimed("minted-by-worker") is None


async def test_no_lookup_or_a_database_away_honours_no_unknown_token():
    tokens = SessionTokens()
    assert await tokens.resolve_claimed("anything") is None

    async def away(_digest: str) -> str | None:
        raise ConnectionRefusedError("the database is away")

    tokens.lookup = away
    assert await tokens.resolve_claimed("anything") is None
