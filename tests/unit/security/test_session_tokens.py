"""Session tokens: a digest kept on disk lets a restarted daemon accept a surviving
builder's token again, and opens nothing by itself."""

from butler.security.session_tokens import SessionTokens


def test_a_token_is_adopted_by_its_digest_alone():
    first = SessionTokens()
    token = first.issue("s1")
    digest = first.digest("s1")
    assert digest is not None and token not in digest

    after_restart = SessionTokens()
    assert after_restart.resolve(token) is None
    assert after_restart.adopt("s1", digest)
    assert after_restart.resolve(token) == "s1"
    assert after_restart.resolve(digest) is None  # the digest is no token
    after_restart.revoke("s1")
    assert after_restart.resolve(token) is None


def test_a_digest_that_is_not_one_is_refused():
    tokens = SessionTokens()
    assert not tokens.adopt("s1", "not hex")
    assert not tokens.adopt("s1", "ab" * 8)
    assert len(tokens) == 0 and tokens.digest("s1") is None
