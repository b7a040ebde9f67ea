"""The benchmarks' own logic: what they count and compare, never how fast anything is."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import cpu  # noqa: E402
import listings  # noqa: E402
import roster_up  # noqa: E402
import rows  # noqa: E402
import spawner  # noqa: E402
import trigger_phases  # noqa: E402
import workers  # noqa: E402

from tests.helpers import require_jail  # noqa: E402


def test_rows_without_a_goal_are_not_counted_as_met():
    found = [
        rows.Row("met", 10, 10, "ref", goal=rows.ratio_at_most(1.3)),
        rows.Row("missed", 20, 10, "ref", goal=rows.ratio_at_most(1.3)),
        rows.Row("explains", 99, 1, "ref"),
        rows.Row("explains too", 1, 99, "ref"),
    ]
    assert rows.tally(found) == (1, 2)


def test_the_table_says_a_row_without_a_goal_is_not_counted_and_what_each_row_measures():
    found = [
        rows.Row("a", 12, 10, "floor", goal=rows.reference_plus(10, "ms"), measures="a's way"),
        rows.Row("b", 5, 10, "floor", measures="b's way"),
    ]
    text = rows.table(found, verdicts=True)
    assert "| 1 | a | 12.0 ms | floor: 10.0 ms | 1.20x | <= reference + 10 ms | yes |" in text
    assert "| 2 | b | 5.0 ms | floor: 10.0 ms | 0.50x | none (not counted) | |" in text
    assert "1. a's way" in text and "2. b's way" in text


def test_goals_compare_with_the_reference_of_the_same_run():
    assert rows.ratio_at_least(0.6).met(6, 10) and not rows.ratio_at_least(0.6).met(5.9, 10)
    assert rows.at_most(50, "ms").met(50, 1) and not rows.at_most(50, "ms").met(50.1, 1)
    assert rows.reference_plus(10, "ms").met(35, 25) and not rows.reference_plus(10, "ms").met(
        36, 25
    )


def test_what_the_jail_adds_pairs_each_run_with_the_bare_one_beside_it_not_by_rank():
    jailed = [30.0, 12.0, 50.0]
    bare = [10.0, 10.0, 45.0]  # the load rose for the third pair
    assert rows.paired_differences(jailed, bare) == [20.0, 2.0, 5.0]
    # Sorted and paired by rank it would say 2, 20, 5 for other pairs than were run.
    with pytest.raises(ValueError, match="differ in number"):
        rows.paired_differences([1.0], [1.0, 2.0])


def test_a_listing_that_returns_less_than_a_page_is_named():
    short = listings.short_pages(
        {"deep page": 0, "search": 100, "live": 20}, {"deep page": 100, "search": 100, "live": 20}
    )
    assert short == {"deep page": "0 rows, a full page is 100"}


def test_a_pool_of_eight_takes_work_as_each_worker_frees_with_no_barrier():
    """One worker holds its first item until every other item is done: a batch would wait."""

    async def scenario() -> int:
        release = asyncio.Event()
        done: list[int] = []

        async def run(i: int) -> None:
            if i == 0:
                await release.wait()
            done.append(i)
            if len(done) == 19:  # every item but the held one
                release.set()

        latencies, _ = await asyncio.wait_for(spawner.pool(spawner.direct(run), 20, 8), 30)
        return len(latencies)

    assert asyncio.run(scenario()) == 20


def test_the_print_mode_no_op_cli_prints_a_result_from_its_argv_alone(tmp_path):
    argv = [str(BENCHMARKS / "noop_print_cli.py"), "-p", "--output-format", "stream-json", "hi"]
    done = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=30, check=True
    )
    assert '"type": "result"' in done.stdout.splitlines()[-1]


def test_cpu_clocks_subtract_field_by_field_and_account_the_database_and_kernel():
    after = cpu.Clocks(10, 1, 2, 0.5, daemon=3, database=0.25, daemon_own=2)
    before = cpu.Clocks(4, 0.5, 1, 0.25, daemon=1, database=0, daemon_own=0.5)
    spent = after - before
    assert spent.machine_less_client == 5.5
    assert spent.accounted == 1 + 0.25 + 2 + 0.25
    assert spent.daemon_own == 1.5


def test_the_postgresql_backends_of_a_process_are_found_by_its_connections(pg_dsn):
    async def scenario() -> tuple[int, list[int]]:
        conn = await asyncpg.connect(pg_dsn)
        try:
            own = await conn.fetchval("SELECT pg_backend_pid()")
            return own, await cpu.backend_pids(pg_dsn, os.getpid())
        finally:
            await conn.close()

    own, found = asyncio.run(scenario())
    assert own in found


def test_the_side_by_side_without_a_predecessor_checkout_says_so_in_one_line(tmp_path):
    argv = [sys.executable, str(BENCHMARKS / "side_by_side.py"), "--predecessor", str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.startswith("side by side skipped: no predecessor checkout")
    assert len(done.stdout.strip().splitlines()) == 1


def test_the_cpu_of_a_jailed_grandchild_reaches_the_benchmark_that_adopts_the_jails_orphans():
    """Without adopting them the daemon never sees it: the jail's init is reaped by pid 1."""
    require_jail()
    import jail_start

    try:
        found = asyncio.run(jail_start.accounting(burn_ms=100, adopt=True))
    finally:
        cpu.adopt_orphans(False)
    assert found["waited for"].children >= 0.1  # seconds: at least what it burned


def test_the_roster_benchmark_refuses_more_butlers_than_postgresql_has_connections_for(
    monkeypatch: pytest.MonkeyPatch,
):
    async def free(_: str) -> int:
        return 15

    monkeypatch.setattr(roster_up, "free_connections", free)
    with pytest.raises(SystemExit) as refused:
        roster_up.measure("postgresql://nowhere/test", 100)
    # The leases' one connection and the roster's cap on its pools' (butler/roster_open.py).
    assert "100 butlers need 21 PostgreSQL connections" in str(refused.value)
    assert "has 15 free" in str(refused.value) and "max_connections" in str(refused.value)


def test_a_triggers_cpu_is_split_by_the_process_that_spent_it():
    daemon = 100
    named = {
        trigger_phases.role("python", daemon, daemon, daemon),
        trigger_phases.role("python", daemon, daemon + 1, daemon),
        trigger_phases.role("run-1a2b3c", 201, 201, daemon),
        trigger_phases.role("setsid", 201, 201, daemon),
        trigger_phases.role("bwrap", 201, 201, daemon),
        trigger_phases.role("bridge", 202, 202, daemon),
        trigger_phases.role("fake_claude.py", 203, 203, daemon),
    }
    assert named == {
        "daemon, event loop thread",
        "daemon, other threads",
        "launch script (sh)",
        "setsid",
        "bubblewrap",
        "bridge",
        "the no-op CLI",
    }


def test_four_worker_processes_give_the_butlers_one_two_and_three_workers():
    served = [workers.served_by(n) for n in range(4)]
    per_butler = {name: sum(name in names for names in served) for name in workers.FLEETS}
    assert per_butler == workers.FLEETS == {"there": 1, "two": 2, "three": 3}
    # The one-at-a-time rows' worker serves its butler alone.
    assert served[0] == ["there"]
    assert workers.served_by(4) == []


def test_a_burst_is_split_among_the_eight_clients_and_none_is_lost():
    assert workers.shares(40) == [5] * 8
    assert workers.shares(4) == [1, 1, 1, 1, 0, 0, 0, 0]
    assert sum(workers.shares(43)) == 43 and max(workers.shares(43)) == 6


def test_more_workers_must_give_strictly_more_triggers_per_second():
    goal = workers.more_than("1 worker")
    assert goal.words == "> 1 worker"
    assert goal.met(3.1, 3.0) and not goal.met(3.0, 3.0)
