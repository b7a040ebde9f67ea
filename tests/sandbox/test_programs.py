"""Which program a jailed runtime starts, with which PATH and HOME, on the session path.

A runtime started through the spawner's own step into the jail
(:func:`butler.spawner.sandboxing.jailed`) by the ``command`` adapter: the
daemon's ``PATH`` names a folder of a home the jail hides (pyenv's shims,
cargo's or nvm's bin), a virtualenv's ``python`` is a link to its base
interpreter, and the session's home sits at one path inside the jail.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from butler.runtimes.base import RuntimeFailure, RuntimeResult
from butler.sandbox.policy import JAIL_HOME
from tests.sandbox.session_path import run_jailed

pytestmark = pytest.mark.slow

SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    """A home folder the jail does not show, with a pyenv-like shim folder in it.

    Its ``python3`` is a shim that runs a program beside it, as pyenv's do:
    found there by the daemon's PATH, it could not run in the jail.
    """
    home = tmp_path / "hidden-home"
    shims, libexec = home / "shims", home / "libexec"
    shims.mkdir(parents=True)
    libexec.mkdir()
    real = libexec / "real-python"
    real.write_text(f'#!/bin/sh\nexec {SYSTEM_PYTHON} "$@"\n')
    for name, target in (("python3", real), ("hidden-only-tool", real)):
        shim = shims / name
        shim.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
    for script in (real, shims / "python3", shims / "hidden-only-tool"):
        script.chmod(0o755)
    return home


async def run(tmp_path: Path, command: list[str], path: str) -> RuntimeResult:
    """``command`` as a butler's command runtime, jailed, with the daemon's ``PATH`` ``path``."""
    return await run_jailed(tmp_path, command, {"PATH": path})


async def test_a_command_the_daemon_finds_in_a_hidden_home_runs_from_the_system(
    tmp_path: Path, hidden: Path
) -> None:
    path = f"{hidden / 'shims'}:/usr/local/bin:/usr/bin:/bin"
    code = "import sys; print(sys.executable)"
    result = await run(tmp_path, ["python3", "-I", "-c", code], path)
    assert result.output.startswith(("/usr/bin/python3", "/usr/local/bin/python3")), result


async def test_the_jails_path_holds_only_folders_the_jail_shows(
    tmp_path: Path, hidden: Path
) -> None:
    path = f"{hidden / 'shims'}:/usr/local/bin:/usr/bin:/bin"
    check = (
        'echo "$PATH"; for d in $(echo "$PATH" | tr : " "); do [ -d "$d" ] || echo "gone $d"; done'
    )
    result = await run(tmp_path, ["/bin/sh", "-c", check], path)
    seen, *gone = result.output.splitlines()
    assert str(hidden) not in seen and gone == [], result.output
    assert "/usr/bin" in seen.split(":")


async def test_a_command_the_jail_cannot_find_is_one_line_naming_it(
    tmp_path: Path, hidden: Path
) -> None:
    path = f"{hidden / 'shims'}:/usr/bin:/bin"
    with pytest.raises(RuntimeFailure) as failed:
        await run(tmp_path, ["hidden-only-tool"], path)
    message = str(failed.value)
    assert "\n" not in message and "'hidden-only-tool' not found" in message, message
    assert "/usr/bin:/bin" in message, "it names the PATH it looked in"


async def test_a_virtualenvs_python_keeps_its_packages_in_the_jail(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    made = await asyncio.create_subprocess_exec(
        SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)
    )
    assert await made.wait() == 0
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "only_in_the_venv.py").write_text("WHERE = 'the venv'\n")
    assert (venv / "bin" / "python").is_symlink()
    code = "import only_in_the_venv, sys; print(only_in_the_venv.WHERE, sys.prefix)"
    result = await run(tmp_path, [str(venv / "bin" / "python"), "-c", code], "/usr/bin:/bin")
    assert result.output == f"the venv {venv}", result


async def test_the_session_home_is_at_one_fixed_path_in_the_jail(tmp_path: Path) -> None:
    report = (
        "import json, os, pathlib, sys;"
        "pathlib.Path(os.environ['HOME'], 'note').write_text('kept');"
        "print(json.dumps([os.environ['HOME'], sys.argv[1]]))"
    )
    command = [SYSTEM_PYTHON, "-I", "-c", report, "{home}/x"]
    result = await run(tmp_path, command, "/usr/bin:/bin")
    # The variable and the argument both name it where the jail shows it.
    assert json.loads(result.output) == [str(JAIL_HOME), f"{JAIL_HOME}/x"]
    assert (tmp_path / "home" / "note").read_text() == "kept"
