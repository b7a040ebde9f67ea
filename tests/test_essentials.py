"""A butler folder read plainly; anything unclear is named as the full load names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from butler.essentials import read_essentials
from tests.helpers import REPO, write_butler

BUTLER = Path(sys.executable).with_name("butler")


def test_the_address_is_the_folder_s_with_the_environment_s_overrides(tmp_path, monkeypatch):
    folder = write_butler(tmp_path, "keeper", port=8123, runtime={"timeout_s": 90})
    found = read_essentials(folder)
    assert found is not None
    assert (found.name, found.port, found.timeout_s) == ("keeper", 8123, 90)
    assert found.mcp_base_url == "http://127.0.0.1:8123"
    monkeypatch.setenv("BUTLER_PORT", "8200")
    monkeypatch.setenv("BUTLER_HOST", "0.0.0.0")
    assert read_essentials(folder).mcp_base_url == "http://127.0.0.1:8200"  # type: ignore[union-attr]


def test_an_unclear_folder_is_named_as_butler_run_names_it(tmp_path):
    folder = write_butler(tmp_path, "keeper", port=8123)
    (folder / "butler.toml").write_text('[butler]\nname = "Keeper"\nport = 8123\n')
    assert read_essentials(folder) is None
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    listed, ran = (
        subprocess.run(
            [str(BUTLER), command, "-c", str(folder)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
        )
        for command in ("sessions", "run")
    )
    assert listed.returncode == ran.returncode == 2
    assert listed.stderr == ran.stderr
    assert "name" in listed.stderr


def test_a_setting_a_command_needs_that_is_unclear_is_named_as_butler_run_names_it(tmp_path):
    folder = write_butler(tmp_path, "keeper", port=8123)
    with (folder / "butler.toml").open("a") as file:
        file.write('[butler.db]\nschema = "Not-A-Schema"\n')
    found = read_essentials(folder)
    assert found is not None and found.db_schema is None  # the address alone is still plain
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    listed, ran = (
        subprocess.run(
            [str(BUTLER), *command, "-c", str(folder)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
        )
        for command in (["credentials", "list"], ["run"])
    )
    assert listed.returncode == ran.returncode == 2
    assert listed.stderr == ran.stderr
    assert "schema" in listed.stderr
