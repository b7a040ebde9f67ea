"""The state store refuses what it cannot keep faithfully, in one line, before the database."""

from __future__ import annotations

import pytest

from butler.errors import UserError
from butler.store.state import StateStore


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("", 1, "key '' is empty; expected 1 to 512 characters"),
        ("k" * 100_000, 1, "is 100000 characters long; expected 1 to 512"),
        ("a\x00b", 1, "holds a NUL character"),
        ("k", float("nan"), "non-finite number"),
        ("k", {"a": "\x00"}, "holds a NUL character"),
        ("k", "x" * (1024 * 1024 + 1), "over the 1048576-byte limit"),
    ],
)
async def test_unstorable_keys_and_values_are_refused_in_one_line(db, key, value, expected):
    state = StateStore(db)
    with pytest.raises(UserError) as refused:
        await state.set(key, value)
    line = str(refused.value)
    assert expected in line and "\n" not in line and len(line) < 300
    assert await state.list() == {}
