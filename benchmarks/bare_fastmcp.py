"""The reference for tool calls: butler's own tools served by FastMCP alone.

Same tools, same database, same stores as a butler; served the way FastMCP
serves any server (``run_http_async``, uvicorn binding its own port), one
port per transport, with none of butler's app around them (no health route,
dashboard, combined lifespans or daemon socket handling).

    .venv/bin/python benchmarks/bare_fastmcp.py CONFIG_DIR DSN HTTP_PORT SSE_PORT
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


async def main(config_dir: str, dsn: str, http_port: int, sse_port: int) -> None:
    from butler.config import load_config
    from butler.daemon import assemble
    from butler.server import build_mcp
    from butler.store.opening import open_store

    config = load_config(Path(config_dir), db_url=dsn)
    opened = await open_store(config.essentials())
    try:
        mcp = build_mcp(await assemble(config, opened.db))
        common = {"host": "127.0.0.1", "show_banner": False, "log_level": "warning"}
        await asyncio.gather(
            mcp.run_http_async(transport="http", port=http_port, **common),
            mcp.run_http_async(transport="sse", port=sse_port, **common),
        )
    finally:
        await opened.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
