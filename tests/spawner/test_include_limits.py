"""Include bombs, deep chains and bad files: refused fast, in one line, the butler serving on."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx2
import pytest

from butler.context import ButlerContext
from butler.errors import ConfigError
from butler.server import build_app
from butler.spawner import prompt as prompt_module
from butler.spawner.prompt import compose_system_prompt
from butler.spawner.spawner import TriggerRequest
from butler.store.state import StateStore
from tests.fakes.runtime import FakeAdapter

LEAF = "0123456789abcdef\n"  # 17 bytes: 2^16 of them pass 1 MiB


def fan_out(roster: Path, levels: int, leaf: str = LEAF) -> str:
    """``shared/bomb/0.md`` includes ``1.md`` twice, ... down to a leaf: 2^levels leaves."""
    folder = roster / "shared" / "bomb"
    folder.mkdir(exist_ok=True)
    for level in range(levels):
        line = f"<!-- @include shared/bomb/{level + 1}.md -->\n"
        (folder / f"{level}.md").write_text(line * 2)
    (folder / f"{levels}.md").write_text(leaf)
    return "<!-- @include shared/bomb/0.md -->\n"


def test_a_2_to_the_22_fan_out_is_refused_in_milliseconds(roster):
    prompt = roster / "x.md"
    prompt.write_text(fan_out(roster, 22))
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"expands past 1048576 bytes with its includes"):
        compose_system_prompt(prompt, roster)
    assert time.monotonic() - started < 1.0


def test_a_fan_out_within_the_limit_is_composed_whole(roster):
    prompt = roster / "x.md"
    prompt.write_text(fan_out(roster, 15, "ab\n"))
    assert compose_system_prompt(prompt, roster).count("ab") == 2**15


def test_a_1500_deep_chain_is_a_depth_error_not_a_recursion_error(roster):
    for n in range(1500):
        (roster / "shared" / f"{n}.md").write_text(f"<!-- @include shared/{n + 1}.md -->")
    (roster / "shared" / "1500.md").write_text("bottom")
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include shared/0.md -->")
    with pytest.raises(ConfigError) as refused:
        compose_system_prompt(prompt, roster)
    line = str(refused.value)
    assert "nested 33 deep; expected includes nested at most 32 deep" in line
    assert "\n" not in line


def test_a_non_utf8_include_is_one_line_naming_it(roster):
    (roster / "shared" / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include shared/latin1.md -->")
    with pytest.raises(ConfigError) as refused:
        compose_system_prompt(prompt, roster)
    line = str(refused.value)
    assert line.startswith(f"{prompt.resolve()}: include {roster.resolve()}/shared/latin1.md")
    assert "expected UTF-8 text, found byte 0xe9 at offset 3" in line


def test_an_edited_include_is_read_again(roster):
    snippet = roster / "shared" / "NOTE.md"
    snippet.write_text("first")
    prompt = roster / "x.md"
    prompt.write_text("<!-- @include shared/NOTE.md -->")
    assert compose_system_prompt(prompt, roster) == "first\n"
    snippet.write_text("second, longer")
    assert compose_system_prompt(prompt, roster) == "second, longer\n"


async def test_a_session_composes_its_prompt_off_the_event_loop(make_spawner, roster, monkeypatch):
    adapter = FakeAdapter()
    spawner = make_spawner(adapter, prompt=fan_out(roster, 15, "ab\n"))
    readers: set[threading.Thread] = set()
    real_read = prompt_module._Expansion.read

    def spy(*args):
        readers.add(threading.current_thread())
        return real_read(*args)

    monkeypatch.setattr(prompt_module._Expansion, "read", spy)
    result = await spawner.trigger(TriggerRequest("go"))
    assert result.success, result.error
    assert adapter.invocations[0].system_prompt.count("ab") == 2**15
    assert readers and threading.current_thread() not in readers


async def test_a_bomb_in_claude_md_fails_its_session_while_health_answers_fast(
    make_spawner, db, roster
):
    spawner = make_spawner(prompt="Start.\n")
    (spawner.config.config_dir / "CLAUDE.md").write_text(fan_out(roster, 16))
    butler = ButlerContext(
        config=spawner.config,
        db=db,
        state=StateStore(db),
        sessions=spawner.sessions,
        spawner=spawner,
    )
    transport = httpx2.ASGITransport(app=build_app(butler))  # served by this very loop
    async with httpx2.AsyncClient(transport=transport, base_url="http://butler") as client:
        await client.get("/health")  # warm up
        session = asyncio.create_task(spawner.trigger(TriggerRequest("hello")))
        slowest = 0.0
        while not session.done():
            started = time.monotonic()
            assert (await client.get("/health")).status_code == 200
            slowest = max(slowest, time.monotonic() - started)
        result = session.result()
    assert result.success is False
    assert "expands past 1048576 bytes with its includes" in result.error
    # Typically a few ms; the bound leaves room for a loaded machine (it was 11-14 s).
    assert slowest < 0.5, f"/health took {slowest * 1000:.0f} ms while the prompt expanded"
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "failed" and row["error"] == result.error
