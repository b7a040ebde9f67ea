"""The heap built by a start is left out of later garbage collections."""

from __future__ import annotations

import gc

from butler.heap import freeze_start_up


def test_objects_alive_when_serving_starts_are_walked_by_no_later_collection():
    kept = [[i] for i in range(100)]  # containers the collector tracks
    try:
        freeze_start_up()
        walked = {id(o) for o in gc.get_objects()}  # generations 0-2: what collections walk
        made_after = [0]
        assert gc.get_freeze_count() >= len(kept)
        assert not any(id(o) in walked for o in kept)
        assert any(o is made_after for o in gc.get_objects())
    finally:
        gc.unfreeze()
