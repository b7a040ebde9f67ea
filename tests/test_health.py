"""GET /health tells a monitor the truth: 200 while the database answers, 503 when not."""

from __future__ import annotations

import httpx2

from butler import __version__
from butler.context import ButlerContext
from butler.server import build_app
from butler.store.state import StateStore


async def test_health_is_503_when_the_database_is_gone(make_spawner, db):
    spawner = make_spawner()
    butler = ButlerContext(
        config=spawner.config,
        db=db,
        state=StateStore(db),
        sessions=spawner.sessions,
        spawner=spawner,
    )
    app = build_app(butler)
    assert await db.ping() is True
    transport = httpx2.ASGITransport(app=app)  # in this loop, where the pool lives
    async with httpx2.AsyncClient(transport=transport, base_url="http://butler") as client:
        healthy = await client.get("/health")
        await db.close()  # as if the server went away
        broken = await client.get("/health")
    # Without the check the route would answer 200 whatever the database says.
    assert healthy.status_code == 200 and healthy.json()["status"] == "ok"
    assert broken.status_code == 503
    assert broken.json() == {"status": "degraded", "butler": "tester", "version": __version__}
