"""A completion the database takes at once is never journalled; one it cannot take is."""

from __future__ import annotations

import logging

import pytest

from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FakeAdapter

pytestmark = pytest.mark.slow


async def test_a_full_data_folder_is_not_reported_while_the_database_takes_completions(
    make_spawner, tmp_path, caplog
):
    # The journal is only for a database that is away: with the database up, a data
    # folder that cannot take a journal line (here, its path runs through a file, as a
    # full disk refuses it) is nothing the owner needs to hear about at every session.
    spawner = make_spawner(FakeAdapter())
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    spawner.completions.journal.path = blocker / "completions.jsonl"
    with caplog.at_level(logging.WARNING, logger="butler.spawner.completions"):
        result = await spawner.trigger(TriggerRequest("hello"))
    assert result.success
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "succeeded"
    assert not [r for r in caplog.records if "not journalled" in r.getMessage()]
