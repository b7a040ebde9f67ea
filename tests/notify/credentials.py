"""A credential stored for a butler the way its owner stores one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import TEST_DSN


def store_credential(folder: Path, name: str, value: str) -> None:
    """``butler credentials set``, the value on standard input, as the owner stores one."""
    env = {**os.environ, "DATABASE_URL": TEST_DSN}
    subprocess.run(
        [sys.executable, "-m", "butler.cli", "credentials", "set", name, "-c", str(folder)],
        input=value,
        text=True,
        env=env,
        check=True,
        capture_output=True,
    )
