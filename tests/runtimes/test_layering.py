"""The runtimes know nothing above them: they import each other, butler.errors, and
leaf helpers that import nothing of butler (so cannot lead back up).

Two leaves live in a package of the upper layers. ``butler.security.private_files``,
the one writer of the daemon's private files: the runtimes write their launch specs
with it. ``butler.security.untrusted``, the one way to touch what a runtime can write:
the runtimes read their CLIs' own files with it and write their config files (which
hold the session's token) into the runtime's home and workspace with it, so that no
link planted there is ever followed. Both stay leaves, and their package's
``__init__`` (run by any import of them) imports nothing either.
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


def _users(module: str) -> set[str]:
    return {p.name for p in RUNTIMES.glob("*.py") if module in butler_imports(p)}


def test_the_private_file_writer_is_a_leaf_the_runtimes_use():
    assert butler_imports(PACKAGE / "security" / "private_files.py") == set()
    assert butler_imports(PACKAGE / "security" / "__init__.py") == set()
    assert "launcher.py" in _users("butler.security.private_files")


def test_the_untrusted_file_module_is_a_leaf_the_runtimes_write_configs_with():
    assert butler_imports(PACKAGE / "security" / "untrusted.py") == set()
    assert "mcp_config.py" in _users("butler.security.untrusted")
