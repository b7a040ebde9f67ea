"""The package's shape, read from its source with ``ast``: imports, file and function sizes.

Run as a script (``python -m tests.structure``) to print every import cycle,
oversized file and oversized function; ``tests/test_structure.py`` asserts on
the same functions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "butler"


@dataclass(frozen=True)
class Module:
    """One ``.py`` file of the package."""

    name: str
    path: Path
    #: The path from the repository root, e.g. ``butler/cli/common.py``.
    where: str
    tree: ast.Module
    lines: int


def modules(root: Path = PACKAGE) -> dict[str, Module]:
    """Every module of the package under ``root``, by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        text = path.read_text()
        where = str(path.relative_to(root.parent))
        found[".".join(parts)] = Module(
            ".".join(parts), path, where, ast.parse(text, str(path)), len(text.splitlines())
        )
    return found


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    # Every import counts: those inside functions run too, and one under
    # ``if TYPE_CHECKING:`` is still an arrow a cycle can hide behind.
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _import_nodes(child)


def imports(module: Module, known: dict[str, Module]) -> set[str]:
    """The package's modules that ``module`` imports (the most specific name that exists)."""
    found: set[str] = set()
    is_package = module.path.name == "__init__.py"
    for node in _import_nodes(module.tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = module.name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t in known else base for t in targets]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module.name:
                found.add(target)
    return found


def graph(known: dict[str, Module] | None = None) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    known = known or modules()
    return {name: imports(module, known) for name, module in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(groups)


def long_files(limit: int, known: dict[str, Module] | None = None) -> dict[str, int]:
    """Files over ``limit`` lines: path relative to the repository -> lines."""
    known = known or modules()
    return {
        str(m.path.relative_to(PACKAGE.parent)): m.lines for m in known.values() if m.lines > limit
    }


def long_functions(limit: int, known: dict[str, Module] | None = None) -> dict[str, int]:
    """Functions over ``limit`` lines, ``def`` to last line: ``path:name`` -> lines."""
    known = known or modules()
    found = {}
    for module in known.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > limit:
                    found[f"{module.where}:{node.name}"] = size
    return found


if __name__ == "__main__":
    edges = graph()
    for group in cycles(edges):
        print("cycle:", " <-> ".join(group))
    for path, size in sorted(long_files(400).items()):
        print(f"file over 400 lines: {path} ({size})")
    for where, size in sorted(long_functions(60).items()):
        print(f"function over 60 lines: {where} ({size})")
