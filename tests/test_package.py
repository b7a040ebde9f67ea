"""butler as a real package: a built wheel, installed into a fresh venv, runs the quick start."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from butler.sandbox.bridge_binary import sources
from butler.store.migrations import discover
from tests.conftest import TEST_DSN
from tests.helpers import REPO, free_port, get_json, wait_until

#: What the wheel is built from: the sources a clone holds, nothing installed.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "butler")


def run(argv: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=600, **kwargs
    )
    assert result.returncode == 0, f"{argv}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
    return result


def build_wheel(tmp_path: Path) -> Path:
    """A wheel built from a copy of the sources, so the checkout is left as it was."""
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "bin")
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        else:
            shutil.copy(REPO / name, source / name)
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, source])
    return next(dist.glob("butler-*.whl"))


def test_the_wheel_ships_every_file_the_program_reads():
    # The package data lists of pyproject.toml, checked against the source tree.
    shipped = {p.relative_to(REPO).as_posix() for p in (REPO / "butler").rglob("*")}
    for name in ("migrations", "assets"):
        assert any(s.startswith(f"butler/{name}/") for s in shipped)
    assert [m.name for m in discover()][:2] == ["sessions", "state"]
    assert not (REPO / "migrations").exists(), "migrations belong in butler/migrations"


def quick_start(bin_dir: Path, tmp_path: Path, schema: str) -> None:
    """``butler --version``, then the quick start's ``butler run`` to a healthy /health."""
    port = free_port()
    # Away from the checkout: nothing may come from the source tree but the roster folder.
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "DATABASE_URL": TEST_DSN,
        "BUTLER_DB_SCHEMA": schema,
        "BUTLER_DATA_DIR": str(tmp_path / "data"),
        "BUTLER_ALLOW_ROOT": "1",  # the suite runs as root
    }
    version = run([bin_dir / "butler", "--version"], cwd=home, env=env)
    assert version.stdout.strip(), "butler --version printed nothing"
    log = tmp_path / "butler.log"
    argv = [bin_dir / "butler", "run", "--config", REPO / "roster" / "health"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*argv, "--port", str(port)],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def health() -> dict[str, object] | None:
            assert proc.poll() is None, log.read_text()
            try:
                return get_json(f"http://127.0.0.1:{port}/health", timeout=1)[1]
            except OSError:
                return None

        body = wait_until(health, timeout=60)
        assert (body["butler"], body["status"]) == ("health", "ok")  # ok: the database answers
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@pytest.mark.timeout(1200)  # installs every dependency into a fresh venv
def test_a_wheel_in_a_fresh_venv_runs_the_quick_start(tmp_path, schema_name):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"butler/migrations/{m.path.name}" for m in discover()}
    expected |= {"butler/assets/page.html", "butler/subagent/default_prompt_template.md"}
    expected |= {"butler/images/python.Containerfile", "butler/images/postgres-entrypoint"}
    # The jail's bridge, compiled by the wheel's build (setup.py), not copied from a checkout.
    expected |= {f"butler/sandbox/bin/bridge-{sources()[1]}"}
    assert expected <= names, expected - names
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    run([venv / "bin" / "pip", "install", "-q", wheel])
    quick_start(venv / "bin", tmp_path, schema_name)
    where = [venv / "bin" / "python", "-c", "import butler; print(butler.__file__)"]
    installed = run(where, cwd=tmp_path / "home")
    assert str(venv) in installed.stdout, "butler was imported from the checkout, not the wheel"
    assert os.path.exists(venv / "bin" / "butler")


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_wheel_installed_with_pipx_runs_the_quick_start(tmp_path, schema_name):
    # pipx is how a person installs a Python command; it is taken from PyPI into a
    # venv of its own, and its home and bin folder are the test's.
    wheel = build_wheel(tmp_path)
    tools = tmp_path / "pipx-venv"
    run([sys.executable, "-m", "venv", tools])
    run([tools / "bin" / "pip", "install", "-q", "pipx"])
    bin_dir = tmp_path / "bin"
    env = {
        **os.environ,
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(bin_dir),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
    }
    run([tools / "bin" / "pipx", "install", "--python", sys.executable, wheel], env=env)
    assert (bin_dir / "butler").exists()
    quick_start(bin_dir, tmp_path, schema_name)
