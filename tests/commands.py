"""The butler command, run as a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO


def butler(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [str(BUTLER), *args],
        capture_output=True,
        text=True,
        env={**clean, "COLUMNS": "100", **(env or {})},
        cwd=REPO,
        timeout=60,
    )


#: The console script the package installs next to the interpreter.
BUTLER = Path(sys.executable).with_name("butler")
