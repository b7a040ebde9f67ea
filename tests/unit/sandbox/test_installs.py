"""Which folders hold a program's installation: the smallest ones, never a home."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from butler.sandbox.installs import installation, known, package, script_venvs, scripts

SYSTEM_PATH = "/usr/bin:/bin"


def outside_system(folders: tuple[Path, ...]) -> set[Path]:
    """``folders`` but the system's (``/usr``: the jail shows it anyway)."""
    return {f for f in folders if f.parts[1] not in {"usr", "bin", "lib"}}


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def link(path: Path, target: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def binary(path: Path) -> Path:
    """An executable file with no shebang (a copy of ``true``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy("/bin/true", path)
    return path


def venv(where: Path, base: Path) -> Path:
    """A virtualenv's layout: ``pyvenv.cfg`` naming ``base``'s folder, ``python`` a link to it."""
    where.mkdir(parents=True)
    (base.parent.parent / "lib").mkdir(exist_ok=True)  # the base's standard library
    (where / "pyvenv.cfg").write_text(f"home = {base.parent}\nversion = 3.12.1\n")
    link(where / "bin" / "python", str(base))
    return where


def test_an_nvm_cli_needs_its_bin_and_the_node_prefix_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prefix = home / ".nvm" / "versions" / "node" / "v22.1.0"
    binary(prefix / "bin" / "node")
    executable(
        prefix / "lib" / "node_modules" / "@acme" / "agent" / "cli.js", "#!/usr/bin/env node\n"
    )
    cli = link(prefix / "bin" / "agent", "../lib/node_modules/@acme/agent/cli.js")
    folders = installation(cli, f"{prefix / 'bin'}:{SYSTEM_PATH}")
    assert outside_system(folders) == {
        prefix / "bin",
        prefix / "lib" / "node_modules" / "@acme" / "agent",
        prefix,  # node's, found on the PATH by the shebang's ``env node``
    }


def test_a_global_npm_prefix_binds_the_package_not_every_global_package(tmp_path: Path) -> None:
    prefix = tmp_path / "home" / ".npm-global"
    executable(prefix / "lib" / "node_modules" / "other" / "index.js", "")
    executable(
        prefix / "lib" / "node_modules" / "agent" / "bin" / "cli.js", "#!/usr/bin/env node\n"
    )
    cli = link(prefix / "bin" / "agent", "../lib/node_modules/agent/bin/cli.js")
    folders = installation(cli, SYSTEM_PATH)
    assert outside_system(folders) == {prefix / "bin", prefix / "lib" / "node_modules" / "agent"}


def test_a_projects_cli_binds_its_outermost_node_modules(tmp_path: Path) -> None:
    modules = tmp_path / "project" / "node_modules"
    script = executable(modules / "agent" / "node_modules" / "x" / "cli.sh", "#!/bin/sh\n")
    assert package(script) == modules  # hoisted siblings are loaded from there


def test_a_pipx_cli_binds_its_venv_and_base_interpreter_not_the_local_folder(
    tmp_path: Path,
) -> None:
    base = binary(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin" / "python3")
    local = tmp_path / "home" / ".local"
    env = venv(local / "pipx" / "venvs" / "agent", base)
    executable(env / "bin" / "agent", f"#!{env / 'bin' / 'python'}\n")
    cli = link(local / "bin" / "agent", str(env / "bin" / "agent"))
    assert known(cli)
    folders = installation(cli, SYSTEM_PATH)
    assert outside_system(folders) == {local / "bin", env, base.parent.parent}
    assert local not in folders


def test_a_shell_wrapper_needs_the_venv_of_the_program_it_starts(tmp_path: Path) -> None:
    base = binary(tmp_path / "python" / "bin" / "python3")
    env = venv(tmp_path / "venv", base)
    executable(env / "bin" / "tool", f"#!{env / 'bin' / 'python'}\n")
    wrapper = executable(
        tmp_path / "skills" / "run.sh", f'#!/bin/bash\nexec "{env}/bin/tool" "$@"\n'
    )
    assert outside_system(installation(wrapper, SYSTEM_PATH)) == {
        wrapper.parent,
        env,
        base.parent.parent,
    }


def test_a_pyenv_shim_is_not_a_known_installation(tmp_path: Path) -> None:
    shim = executable(tmp_path / ".pyenv" / "shims" / "python3", "#!/bin/sh\nexec pyenv exec\n")
    assert not known(shim)


def test_a_home_is_never_one_of_the_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    script = executable(home / "agent", "#!/bin/sh\n")
    assert outside_system(installation(script, SYSTEM_PATH)) == set()
    assert os.path.realpath(home) not in map(str, installation(script, SYSTEM_PATH))


def test_a_skill_script_binds_only_the_virtualenv_it_names(tmp_path: Path) -> None:
    base = binary(tmp_path / "python" / "bin" / "python3")
    env = venv(tmp_path / "venv", base)
    skills = tmp_path / "skills"
    good = executable(skills / "a" / "run.py", f"#!{env / 'bin' / 'python'}\n")
    # A session may write its skills: a first line naming any other folder binds nothing.
    secret = executable(tmp_path / "home" / ".ssh" / "run", "#!/bin/sh\n")
    bad = executable(skills / "b" / "run.sh", f"#!{secret}\n")
    wrapper = executable(skills / "c" / "run.sh", f"#!/bin/sh\nexec {secret} {tmp_path}\n")
    assert set(scripts(skills)) == {good, bad, wrapper}
    assert set(script_venvs(good)) == {env, base.parent.parent}
    assert script_venvs(bad) == () and script_venvs(wrapper) == ()


def test_a_standalone_binary_binds_its_folder_not_the_tokens_beside_it(tmp_path: Path) -> None:
    cargo = tmp_path / "home" / ".cargo"
    (cargo / "credentials.toml").parent.mkdir(parents=True)
    (cargo / "credentials.toml").write_text("token = 'x'\n")
    cli = binary(cargo / "bin" / "agent")
    assert known(cli)
    assert outside_system(installation(cli, SYSTEM_PATH)) == {cargo / "bin"}


def test_a_binary_in_the_local_bin_never_binds_the_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / ".local" / "lib").mkdir(parents=True)
    cli = binary(home / ".local" / "bin" / "agent")
    assert outside_system(installation(cli, SYSTEM_PATH)) == {home / ".local" / "bin"}


def test_a_pyvenv_cfg_naming_a_folder_with_no_python_binds_no_base(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".ssh"
    secret.mkdir(parents=True)
    forged = tmp_path / "butler" / "fake"
    forged.mkdir(parents=True)
    (forged / "pyvenv.cfg").write_text(f"home = {secret}\n")
    executable(forged / "bin" / "python", "#!/bin/sh\n")
    skill = executable(tmp_path / "butler" / "skills" / "run", f"#!{forged / 'bin' / 'python'}\n")
    assert secret not in script_venvs(skill)
