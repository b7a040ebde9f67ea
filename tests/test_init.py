"""``butler init NAME``: a folder that starts as written and answers a trigger."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from butler.config import load_config
from tests.fakes.model_server import Text
from tests.helpers import REPO, DaemonProcess, free_port, write_butler

BUTLER = Path(sys.executable).with_name("butler")


def butler(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None):
    clean = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [str(BUTLER), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**clean, **(env or {})},
        timeout=180,
    )


def test_init_writes_a_commented_folder_on_the_next_port(tmp_path):
    roster = tmp_path / "roster"
    write_butler(roster, "health", port=8101)
    done = butler("init", "finance", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = roster / "finance"
    assert {p.name for p in folder.iterdir()} == {"butler.toml", "CLAUDE.md", "skills"}
    toml = (folder / "butler.toml").read_text()
    assert toml.count("\n#") >= 10  # says what each setting is for
    config = load_config(folder)
    assert (config.name, config.butler.port, config.runtime.type) == (
        "finance",
        8102,
        "claude-code",
    )
    assert "butler run --config roster/finance" in done.stdout


def test_init_never_touches_an_existing_folder_and_names_a_bad_name(tmp_path):
    (tmp_path / "roster" / "mine").mkdir(parents=True)
    (tmp_path / "roster" / "mine" / "notes.txt").write_text("keep")
    taken = butler("init", "mine", cwd=tmp_path)
    assert taken.returncode == 2
    assert taken.stderr == (
        "butler: error: roster/mine: already exists; expected a new folder (nothing was changed)\n"
    )
    assert [p.name for p in (tmp_path / "roster" / "mine").iterdir()] == ["notes.txt"]
    bad = butler("init", "My Butler", cwd=tmp_path)
    assert bad.returncode == 2 and "'My Butler': expected a butler name" in bad.stderr
    assert not (tmp_path / "roster" / "My Butler").exists()


@pytest.mark.slow
def test_a_new_butler_starts_and_answers_a_trigger(tmp_path, schema_name, pg_dsn, fake_model):
    # The first hour: init, run, trigger; the genuine Claude Code against the fake model.
    roster = tmp_path / "roster"
    done = butler("init", "garden", "--port", "70000", "--roster", str(roster))
    assert done.returncode == 2, done.stdout  # the config's own check, and nothing left
    assert "butler.port" in done.stderr
    assert not (roster / "garden").exists()
    port = free_port()
    done = butler("init", "garden", "--port", str(port), "--roster", str(roster))
    assert done.returncode == 0, done.stderr
    folder = roster / "garden"
    env = {
        "ANTHROPIC_API_KEY": "sk-fake",
        "ANTHROPIC_BASE_URL": fake_model.url,
        "BUTLER_DB_SCHEMA": schema_name,
    }
    fake_model.script = [Text("The roses need water.")]
    with DaemonProcess(folder, port=port, database_url=pg_dsn, env=env):
        answered = butler("trigger", "-c", str(folder), "What needs doing?", env=env)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "The roses need water.\n"
