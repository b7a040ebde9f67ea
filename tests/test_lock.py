"""requirements.lock, the image's Python dependencies, agrees with pyproject.toml."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import REPO

LOCK = REPO / "requirements.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\]+)")


def locked() -> dict[str, tuple[str, int]]:
    """name -> (version, how many hashes), for every requirement of the lock file."""
    found: dict[str, tuple[str, int]] = {}
    name = None
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if match := _PIN.match(line):
            name = canonicalize_name(match.group(1))
            found[name] = (match.group(2), 0)
        elif name and line.strip().startswith("--hash=sha256:"):
            version, hashes = found[name]
            found[name] = (version, hashes + 1)
        elif line and not line.startswith((" ", "#")):
            raise AssertionError(f"requirements.lock: not an exact pin: {line!r}")
    return found


def test_every_dependency_of_pyproject_is_pinned_with_hashes_in_the_lock():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = locked()
    for spec in project["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is in pyproject.toml but not in the lock"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"the lock pins {requirement.name}=={version}, outside pyproject's {spec!r}"
        )
        assert hashes > 0, f"{requirement.name} has no hash in the lock"
    assert all(hashes for _, hashes in pins.values()), "every locked package needs its hash"
