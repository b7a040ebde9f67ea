"""Start runtime CLIs through one launcher that gives them exactly the built environment.

Two callers need it. claude-agent-sdk merges the daemon's whole environment
into the CLI's and cannot be told otherwise, so an unjailed session's CLI path
is the launcher, which drops what the spec does not pass through and execs
the CLI in a new process group (a jailed session needs none: the jail's launch
script and bubblewrap do the same, see ``Sandbox.wrap_exact``). A builder's
tmux pane runs the launcher too, so neither its argv nor its credentials reach
tmux; there the launcher stays to record how the runtime ended.

The launcher is ``launch_main.py`` under ``python -I -S``. CPU per launch,
measured side by side on a loaded 2-core machine, each exec'ing ``/bin/true``
(0.6 ms alone): a full interpreter importing ``butler`` 80 ms; this one 10 ms;
``/bin/sh`` with ``setsid`` and ``env -i`` 3 ms. No launcher at all is not an
option: the SDK always merges the daemon's environment into the CLI's, and
starts it in the daemon's process group. The shell would save 7 ms more but
make two launchers: a builder's needs its spec (secrets included) deleted
before the runtime starts and its exit recorded with the signal that ended
it, which in a shell means a second program in a second language.
"""

from __future__ import annotations

import json
import marshal
import sys
from collections.abc import Iterable
from pathlib import Path

from butler.runtimes.launch_main import EXIT_FILE
from butler.security.private_files import write_private

SPEC_FILE = "launch.spec"
#: What a builder's pane terminal needs; set by tmux, never a secret.
TERMINAL_VARS = ("TERM", "COLORTERM")
SCRIPT_FILE = "launch"
PROGRAM_DIR = Path(__file__).resolve().parent
#: A shebang line is cut at this length by the kernel, and split on no whitespace.
SHEBANG_MAX = 250


def write_launcher(
    folder: Path,
    argv: list[str],
    env: dict[str, str] | None = None,
    *,
    passthrough: Iterable[str] = (),
    supervise: bool = False,
) -> Path:
    """Write ``folder/launch`` (executable) and its private spec; return the launcher.

    The runtime gets ``env`` plus those of ``passthrough`` the launcher
    inherits, and the launcher's own arguments after ``argv``. An existing
    spec is an error: the launcher never runs one someone else planted.
    """
    interpreter = sys.executable
    if len(interpreter) > SHEBANG_MAX or any(c.isspace() for c in interpreter):
        raise ValueError(
            f"interpreter path {interpreter!r} cannot start the launcher; "
            f"expected a path without whitespace, at most {SHEBANG_MAX} characters"
        )
    spec = {"argv": list(argv), "env": dict(env or {}), "pass": sorted(set(passthrough))}
    spec["supervise"] = supervise
    spec_path = write_private(folder / SPEC_FILE, marshal.dumps(spec), how="exclusive")
    script = folder / SCRIPT_FILE
    script.unlink(missing_ok=True)
    text = (
        f"#!{interpreter} -IS\nimport sys\nsys.path.insert(0, {str(PROGRAM_DIR)!r})\n"
        f"import launch_main\nlaunch_main.main({str(spec_path)!r}, sys.argv[1:])\n"
    )
    return write_private(script, text, how="exclusive", executable=True)


def read_exit(folder: Path) -> dict[str, int | None] | None:
    """How a supervised runtime in ``folder`` ended, once its launcher wrote it."""
    try:
        return json.loads((folder / EXIT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
