"""The state store against a real PostgreSQL."""

from butler.store.state import StateStore


async def test_set_get_list_delete(db):
    state = StateStore(db)
    await state.set("medications/ibuprofen", {"dose": "200mg"})
    await state.set("medications/iron", {"dose": "65mg"})
    await state.set("med_other", 1)
    assert await state.get("medications/ibuprofen") == {"dose": "200mg"}
    assert sorted(await state.list("medications/")) == ["medications/ibuprofen", "medications/iron"]
    # '_' is a LIKE wildcard: a prefix must match literally.
    assert list(await state.list("med_")) == ["med_other"]
    assert await state.delete("medications/iron") is True
    assert await state.delete("medications/iron") is False
    assert await state.get("missing") is None
