"""The runtimes know nothing above them: they import each other, butler.errors, and
leaf helpers that import nothing of butler (so cannot lead back up).

One leaf lives in a package of the upper layers: ``butler.security.private_files``,
the one writer of private files. The runtimes write their MCP configs (which hold
the session's token) and launch specs with it, so that no link planted where one
goes is ever followed; it stays a leaf, and its package's ``__init__`` (run by any
import of it) imports nothing either.
"""

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
    if not module.is_file():
        return False
    # Importing a module runs its package's __init__ first: that must be a leaf too.
    run = [module] if module.parent == PACKAGE else [module, module.parent / "__init__.py"]
    return not any(butler_imports(path) for path in run)


def test_runtimes_import_only_runtimes_and_errors():
    outside = {
        f"{path.name}: {name}"
        for path in sorted(RUNTIMES.glob("*.py"))
        for name in butler_imports(path)
        if not allowed(name)
    }
    assert not outside, sorted(outside)


def test_the_private_file_writer_is_a_leaf_the_runtimes_use():
    writer = PACKAGE / "security" / "private_files.py"
    assert butler_imports(writer) == set()
    assert butler_imports(PACKAGE / "security" / "__init__.py") == set()
    users = {
        p.name
        for p in RUNTIMES.glob("*.py")
        if "butler.security.private_files" in butler_imports(p)
    }
    assert "mcp_config.py" in users
