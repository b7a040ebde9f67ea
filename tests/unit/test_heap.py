"""A serving daemon's collector: the heap built by its start left out of later
collections, young objects collected less often."""

from __future__ import annotations

import gc

from butler.heap import YOUNG_THRESHOLD, settle_for_serving


def test_objects_alive_when_serving_starts_are_walked_by_no_later_collection():
    kept = [[i] for i in range(100)]  # containers the collector tracks
    threshold = gc.get_threshold()
    try:
        settle_for_serving()
        walked = {id(o) for o in gc.get_objects()}  # generations 0-2: what collections walk
        made_after = [0]
        assert gc.get_freeze_count() >= len(kept)
        assert not any(id(o) in walked for o in kept)
        assert any(o is made_after for o in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_young_objects_are_collected_after_thousands_of_allocations_not_hundreds():
    threshold = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        settle_for_serving()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
