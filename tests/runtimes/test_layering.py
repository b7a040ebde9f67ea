"""The runtimes know nothing above them: they import each other, butler.errors, and
leaf helpers that import nothing of butler (so cannot lead back up)."""

from __future__ import annotations

import ast
from pathlib import Path

import butler.runtimes

RUNTIMES = Path(butler.runtimes.__file__).parent
PACKAGE = RUNTIMES.parent


def butler_imports(path: Path) -> set[str]:
    """Every butler module ``path`` imports, deferred and type-only imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from butler.security import untrusted`` imports the module, not the package.
            modules = {f"{node.module}.{alias.name}" for alias in node.names}
            submodules = {m for m in modules if _module_file(m).is_file()}
            found.update(submodules or {node.module})
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "butler" or name.startswith("butler.")}


def _module_file(name: str) -> Path:
    return PACKAGE.parent / (name.replace(".", "/") + ".py")


def allowed(name: str) -> bool:
    """Runtimes, errors, and leaves: modules importing nothing of butler (such as
    ``butler.security.untrusted``, the one way to read what a runtime wrote)."""
    if name.startswith("butler.runtimes") or name == "butler.errors":
        return True
    module = _module_file(name)
    return module.is_file() and not butler_imports(module)


def test_runtimes_import_only_runtimes_and_errors():
    outside = {
        f"{path.name}: {name}"
        for path in sorted(RUNTIMES.glob("*.py"))
        for name in butler_imports(path)
        if not allowed(name)
    }
    assert not outside, sorted(outside)
