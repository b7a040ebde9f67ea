"""A session named by the start of its id: which starts are taken, and what they cover."""

from __future__ import annotations

import uuid

import pytest

from butler.store.session_ids import ambiguous, id_range, short


def test_a_start_of_four_or_more_hex_digits_covers_every_id_beginning_with_it():
    low, high = id_range("562db1d7")
    assert low == uuid.UUID("562db1d7-0000-0000-0000-000000000000")
    assert high == uuid.UUID("562db1d7-ffff-ffff-ffff-ffffffffffff")
    first, last = id_range("562D-B1")  # dashes and capitals as a person may paste them
    assert (str(first), str(last)) == (
        "562db100-0000-0000-0000-000000000000",
        "562db1ff-ffff-ffff-ffff-ffffffffffff",
    )


def test_a_whole_id_is_itself():
    whole = uuid.uuid4()
    assert id_range(str(whole)) == (whole, whole)


@pytest.mark.parametrize("given", ["", "562", "562db1d7x", "../etc", "g00d", "5" * 33])
def test_what_cannot_start_an_id_finds_nothing(given):
    assert id_range(given) is None


def test_an_ambiguous_start_names_some_of_the_ids_it_starts():
    ids = [uuid.UUID(f"562db1d7-{i:04x}-4000-8000-000000000000") for i in range(6)]
    line = str(ambiguous("562db1d7", ids))
    assert line.startswith("'562db1d7' starts the ids of several sessions (562db1d7-000,")
    assert line.endswith(", ...); give more of the id")
    assert short(ids[0]) == "562db1d7"
