"""Programs found where users install them run in the jail, their installation bound read-only.

The daemon's ``PATH`` finds an agent CLI where its user installed it: nvm's
``~/.nvm/versions/node/vX/bin`` (a link into ``lib/node_modules/<pkg>``, run by the
``node`` beside it), a project's ``node_modules/.bin``, pipx's ``~/.local/bin`` (a
link to a virtualenv's console script). A skill's script may start with a
virtualenv's ``python``, or be a shell wrapper around a virtualenv's program. All
of it lives in a home the jail hides (here: under the test's temporary folder,
which the jail's own ``/tmp`` hides): before, the jail's ``PATH`` dropped the folder
and every session failed "not found on PATH", or the script could not start.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from butler.runtimes.base import RuntimeResult
from tests.helpers import require_jail
from tests.sandbox.session_path import run_jailed

pytestmark = pytest.mark.slow

SYSTEM_PYTHON = "/usr/bin/python3"
SYSTEM_PATH = "/usr/bin:/bin"


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def link(path: Path, target: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


async def run(tmp_path: Path, command: list[str], path: str) -> RuntimeResult:
    require_jail()
    return await run_jailed(tmp_path, command, {"PATH": path})


def clis_bin() -> Path:
    """The pinned genuine CLIs' ``node_modules/.bin`` (clis/: no folder the jail shows)."""
    found = Path(__file__).resolve().parents[2] / "clis" / "node_modules" / ".bin"
    if not (found / "codex").exists():
        pytest.fail("the genuine codex CLI is not installed: run scripts/setup-dev", False)
    return found


async def make_venv(where: Path, module: str) -> Path:
    """A virtualenv (``python -m venv``) with ``module`` only in it, and a console script
    ``tool`` that imports it, as pip writes one."""
    made = await asyncio.create_subprocess_exec(
        SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(where)
    )
    assert await made.wait() == 0
    site = next(iter(await asyncio.to_thread(lambda: list(where.glob("lib/python3*/site-*")))))
    (site / f"{module}.py").write_text("import sys\ndef main(): print('venv', sys.prefix)\n")
    executable(
        where / "bin" / "tool",
        f"#!{where / 'bin' / 'python'}\nimport sys\nfrom {module} import main\nsys.exit(main())\n",
    )
    return where


async def test_an_nvm_cli_on_the_daemons_path_runs_with_the_node_beside_it(
    tmp_path: Path,
) -> None:
    version = tmp_path / "home" / ".nvm" / "versions" / "node" / "v22.1.0"
    # nvm's node is a binary in its prefix's bin (here a shell, which runs the CLI's file).
    node = version / "bin" / "node"
    node.parent.mkdir(parents=True)
    shutil.copy(shutil.which("dash") or "/bin/dash", node)
    package = version / "lib" / "node_modules" / "@acme" / "agent"
    executable(package / "lib" / "answer.txt", "the nvm cli\n")
    executable(
        package / "bin" / "cli.js",
        # As node does, by the file's real path (not the link's in bin/).
        '#!/usr/bin/env node\nhere=$(dirname "$(readlink -f "$0")")\n'
        'read line < "$here/../lib/answer.txt" && echo "$line"\n',
    )
    link(version / "bin" / "agent", "../lib/node_modules/@acme/agent/bin/cli.js")
    result = await run(tmp_path, ["agent"], f"{version / 'bin'}:{SYSTEM_PATH}")
    assert result.output == "the nvm cli", result


async def test_a_projects_node_modules_bin_cli_runs_with_its_hoisted_siblings(
    tmp_path: Path,
) -> None:
    modules = tmp_path / "project" / "node_modules"
    executable(modules / "helper" / "say.sh", "echo from the sibling package\n")
    executable(
        modules / "agent" / "bin" / "agent.sh",
        '#!/bin/sh\n. "$(dirname "$(readlink -f "$0")")/../../helper/say.sh"\n',
    )
    link(modules / ".bin" / "agent", "../agent/bin/agent.sh")
    result = await run(tmp_path, ["agent"], f"{modules / '.bin'}:{SYSTEM_PATH}")
    assert result.output == "from the sibling package", result


async def test_a_pipx_cli_runs_from_its_virtualenv(tmp_path: Path) -> None:
    local = tmp_path / "home" / ".local"
    venv = await make_venv(local / "pipx" / "venvs" / "agent", "pipx_only_module")
    link(local / "bin" / "agent", str(venv / "bin" / "tool"))
    result = await run(tmp_path, ["agent"], f"{local / 'bin'}:{SYSTEM_PATH}")
    assert result.output == f"venv {venv}", result


async def test_a_script_whose_shebang_is_a_virtualenvs_python_runs(tmp_path: Path) -> None:
    venv = await make_venv(tmp_path / "venvs" / "skill", "skill_only_module")
    script = executable(
        tmp_path / "skills" / "report.py",
        f"#!{venv / 'bin' / 'python'}\nimport skill_only_module\nskill_only_module.main()\n",
    )
    result = await run(tmp_path, [str(script)], SYSTEM_PATH)
    assert result.output == f"venv {venv}", result


async def test_a_bash_wrapper_around_a_virtualenvs_console_script_runs(tmp_path: Path) -> None:
    venv = await make_venv(tmp_path / "venvs" / "wrapped", "wrapped_only_module")
    script = executable(
        tmp_path / "skills" / "run.sh", f'#!/bin/bash\nexec "{venv}/bin/tool" "$@"\n'
    )
    result = await run(tmp_path, [str(script)], SYSTEM_PATH)
    assert result.output == f"venv {venv}", result


async def test_a_global_npm_cli_sees_its_package_and_nothing_else_of_the_home(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    prefix = home / ".npm-global"
    executable(prefix / "lib" / "node_modules" / "other" / "index.js", "")
    look = [home / ".ssh" / "id_ed25519", prefix / "lib" / "node_modules" / "other", prefix / "bin"]
    executable(
        prefix / "lib" / "node_modules" / "agent" / "bin" / "cli.js",
        "#!/usr/bin/env node\nconst fs = require('fs');\n"
        f"console.log({[str(p) for p in look]!r}.map(p => fs.existsSync(p)).join(' '));\n",
    )
    link(prefix / "bin" / "agent", "../lib/node_modules/agent/bin/cli.js")
    result = await run(tmp_path, ["agent"], f"{prefix / 'bin'}:{SYSTEM_PATH}")
    # Read-only, the package and its entry point's folder: not the key, not another package.
    assert result.output == "false false true", result


async def test_a_skill_the_runtime_runs_with_a_virtualenvs_python_runs(tmp_path: Path) -> None:
    venv = await make_venv(tmp_path / "venvs" / "skill", "skill_module")
    # The butler folder's skills/, which the session's runtime (here a shell) runs itself.
    skill = tmp_path / "roster" / "jailed" / "skills" / "report" / "run.py"
    executable(skill, f"#!{venv / 'bin' / 'python'}\nimport skill_module\nskill_module.main()\n")
    result = await run(tmp_path, ["/bin/sh", "-c", "skills/report/run.py"], SYSTEM_PATH)
    assert result.output == f"venv {venv}", result


async def test_the_genuine_codex_cli_in_a_hidden_node_modules_bin_runs(tmp_path: Path) -> None:
    bin_folder = clis_bin()
    result = await run(tmp_path, ["codex", "--version"], f"{bin_folder}:{SYSTEM_PATH}")
    assert result.output.startswith("codex-cli "), result
