"""The package's shape, read from its source with ``ast``: imports, layers, sizes.

:data:`LAYERS` is the one declaration of the layer order (docs/architecture.md
draws it). Run as a script (``python -m tests.structure``) to print every
import cycle, import that points up or sideways, oversized file and oversized
function; ``tests/test_structure.py`` asserts on the same functions.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "butler"

#: The layers, top to bottom: a module may import a module of a layer below its own,
#: never one above, nor another unit of its own layer (a unit is one entry: a package
#: or a module; inside a unit, imports are free but for cycles). A module belongs to
#: the unit with the longest name that is its own name or a prefix of it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("commands", ("butler.cli",)),
    ("serving", ("butler.roster",)),
    ("the roster's parts", ("butler.roster_channels", "butler.roster_folders",
                          "butler.roster_open", "butler.roster_status")),
    ("assembly", ("butler.daemon", "butler.server")),
    ("surfaces", ("butler.tools", "butler.dashboard")),
    ("terminal", ("butler.webterm",)),
    ("the assembled butler", ("butler.context",)),
    ("features", ("butler.builders", "butler.subagent", "butler.contract", "butler.scheduler",
                  "butler.channels", "butler.testing", "butler.scaffold",
                  "butler.service", "butler.workers", "butler.images")),
    ("reaching the person", ("butler.notify",)),
    ("the session path", ("butler.spawner",)),
    ("mechanisms", ("butler.sandbox", "butler.client", "butler.daemons")),
    ("configuration", ("butler.config",)),
    ("parts", ("butler.runtimes", "butler.store", "butler.security")),
    ("helpers", ("butler.logs", "butler.paths", "butler.jsonfile", "butler.tomlfile",
                 "butler.telemetry", "butler.http_limits", "butler.http_quiet",
                 "butler.hygiene", "butler.heap", "butler.root", "butler.mcp_http",
                 "butler.essentials", "butler.adapters")),
    # Leaves that import nothing of butler, used from every layer: the package's
    # version, the errors, the one private-file writer, the one way to touch what a
    # runtime can write, a runtime's settings, the built-in runtimes' names, the clock,
    # a process named by pid and start time.
    ("ground", ("butler", "butler.errors", "butler.security.private_files",
                "butler.security.untrusted", "butler.runtimes.settings", "butler.runtimes.builtin",
                "butler.clock", "butler.processes")),
)  # fmt: skip


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


#: What only the spawner does (docs/architecture.md, "The one session path"), and the
#: names that do it. No module above the spawner imports or calls one of them.
SESSION_PATH: dict[str, frozenset[str]] = {
    "creates or completes a session row": frozenset(
        {"SessionLifecycle", "NewSession", "SessionOutcome", "mark_running", "fail_unfinished",
         "reap_orphans", "lifecycle", "_lifecycle"}
    ),
    "builds a runtime argv or environment": frozenset(
        {"build_invocation", "build_runtime_env", "interactive_command",
         "write_launcher", "TERMINAL_VARS"}
    ),
    "writes a runtime config file": frozenset({"mcp_config_files", "write_files", "empty_files"}),
    "starts a jail": frozenset(
        {"start_jail", "open_jail", "start_jail_for", "jail_for", "jail_invocation", "jailed",
         "git_jail", "bwrap_argv", "JailPolicy", "survivors", "jails", "_jails"}
    ),
}  # fmt: skip
#: The exceptions, by module: ``ask`` and ``chat`` run the person's own CLI, no butler
#: session. They enter the jail by the spawner's one way in, and give their agent
#: empty MCP configs, so that it calls no server. The daemon's own git runs no runtime
#: either: it too enters by the spawner's way in, a jail with no network.
SESSION_PATH_ALLOWED: dict[str, frozenset[str]] = {
    "butler.builders.git": frozenset({"git_jail"}),
    "butler.subagent.jail": frozenset({"jail_for"}),
    "butler.subagent.runner": frozenset({"empty_files"}),
}


def _names_used(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Names a module imports from butler, and attributes it reads or calls."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("butler"):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr


def session_path_outside_spawner(known: dict[str, Module] | None = None) -> list[str]:
    """Every place above the spawner that does what only the spawner does."""
    known = known or modules()
    spawner = unit_of("butler.spawner")[0]
    found = []
    for name, module in sorted(known.items()):
        if unit_of(name)[0] >= spawner:
            continue
        allowed = SESSION_PATH_ALLOWED.get(name, frozenset())
        for line, used in _names_used(module.tree):
            for what, names in SESSION_PATH.items():
                if used in names and used not in allowed:
                    found.append(f"{module.where}:{line} {what} ({used})")
    return found


def _is_table(node: ast.AST) -> bool:
    """A literal made only of literals: constants in tuples, lists, sets and dicts."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_is_table(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_table(k) for k in node.keys) and all(
            _is_table(v) for v in node.values
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("frozenset", "tuple") and all(_is_table(a) for a in node.args)
    return False


def fmt_skips_outside_tables(known: dict[str, Module] | None = None) -> list[str]:
    """Every ``# fmt: skip`` that keeps code (not a table) from the formatter."""
    known = known or modules()
    found = []
    for module in known.values():
        lines = module.path.read_text().splitlines()
        marked = {i + 1 for i, line in enumerate(lines) if line.rstrip().endswith("# fmt: skip")}
        tables = {
            node.end_lineno
            for node in ast.walk(module.tree)
            if isinstance(node, ast.Assign | ast.AnnAssign)
            and node.value is not None
            and _is_table(node.value)
        }
        found += [f"{module.where}:{line}" for line in sorted(marked - tables)]
    return sorted(found)


def unit_of(module: str) -> tuple[int, str]:
    """The layer (its index, 0 at the top) and unit of ``module``; KeyError if none declares it."""
    best: tuple[int, str] | None = None
    for index, (_, units) in enumerate(LAYERS):
        for unit in units:
            # The package itself ("butler") holds only its own __init__, not every module.
            inside = module.startswith(unit + ".") and unit != PACKAGE.name
            if module == unit or inside:
                if best is None or len(unit) > len(best[1]):
                    best = (index, unit)
    if best is None:
        raise KeyError(f"{module} is in no layer of tests/structure.py LAYERS")
    return best


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that points up or sideways, or from or to a module no layer holds."""
    found = []
    for module in sorted(edges):
        for target in sorted(edges[module]):
            try:
                (low, unit), (high, other) = unit_of(module), unit_of(target)
            except KeyError as exc:
                found.append(str(exc.args[0]))
                continue
            if high < low:
                found.append(f"{module} imports {target}, a layer above it (upward)")
            elif high == low and unit != other:
                found.append(f"{module} imports {target}, beside it in its layer (sideways)")
    return sorted(set(found))


#: The libraries butler reaches below their public API, by import name, and the one module
#: that may (butler/adapters/__init__.py says why each exists).
ADAPTERS: dict[str, str] = {
    "fastmcp": "butler.adapters.fastmcp",
    "mcp": "butler.adapters.mcp",
    "mcp_types": "butler.adapters.mcp",
    "uvicorn": "butler.adapters.uvicorn",
    "typer": "butler.cli.plain_params",
}  # fmt: skip


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imported_libraries(tree: ast.AST) -> set[str]:
    """The top-level names of everything ``tree`` imports (absolute imports only)."""
    found = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def private_names(tree: ast.AST) -> set[str]:
    """The private names ``tree`` defines: functions, classes, module names, attributes
    it assigns (``self._x = ...``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return {name for name in found if _private(name)}


def library_source(library: str) -> str:
    """The installed ``library``'s Python source, every file of it, as one text."""
    import importlib.util

    spec = importlib.util.find_spec(library)
    if spec is None:
        return ""
    roots = list(spec.submodule_search_locations or [])
    files = [f for r in roots for f in Path(r).rglob("*.py")] if roots else [Path(spec.origin)]
    return "\n".join(path.read_text(errors="replace") for path in files)


def private_reaches(
    known: dict[str, Module] | None = None, sources: dict[str, str] | None = None
) -> list[str]:
    """Every place outside a library's adapter (:data:`ADAPTERS`) that reaches a private
    name of it: a private module or name imported from it, or a private attribute the
    library defines read on anything but ``self`` or ``cls`` in a module that imports it.

    ``sources`` (import name -> its source text) defaults to the installed libraries'. A
    private name butler defines too is its own, not counted.
    """
    known = known or modules()
    sources = sources if sources is not None else {}
    own = set().union(*(private_names(m.tree) for m in known.values()))
    found: list[tuple[str, int, str]] = []
    for name, module in sorted(known.items()):
        for library in sorted(_imported_libraries(module.tree) & set(ADAPTERS)):
            if ADAPTERS[library] == name:
                continue
            for node in ast.walk(module.tree):
                reach = _reach(node, library, own)
                if reach is None:
                    continue
                if reach.startswith("."):
                    if library not in sources:
                        sources[library] = library_source(library)
                    if not re.search(rf"\b{re.escape(reach[1:])}\b", sources[library]):
                        continue
                found.append((module.where, node.lineno, f"{library}: {reach}"))
    return [f"{where}:{line} {what}" for where, line, what in sorted(found)]


def _reach(node: ast.AST, library: str, own: set[str]) -> str | None:
    """What private part of ``library`` ``node`` may reach: a module or a name imported
    from it, or ``.name`` read on an object (the library's if it defines that name)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == library and any(_private(p) for p in parts):
                return alias.name
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        parts = node.module.split(".")
        if parts[0] == library:
            if any(_private(p) for p in parts):
                return node.module
            private = [a.name for a in node.names if _private(a.name)]
            if private:
                return f"{node.module}.{private[0]}"
    elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
        owner = node.value
        if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
            return f".{node.attr}"
    return None


def undeclared_imports(
    known: dict[str, Module] | None = None, pyproject: Path | None = None
) -> list[str]:
    """Every third-party top-level import of the package whose distribution pyproject.toml
    does not declare: ``place: import -> distributions``.

    Import names are mapped to distributions by ``importlib.metadata``; a distribution is
    declared when pyproject.toml lists it, or when one it lists requires it at one exact
    version (``fastmcp`` pins ``fastmcp-slim``, which holds the ``fastmcp`` package).
    """
    import sys
    import tomllib
    from importlib.metadata import PackageNotFoundError, packages_distributions, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    known = known or modules()
    pyproject = pyproject or PACKAGE.parent / "pyproject.toml"
    listed = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    declared = {canonicalize_name(Requirement(spec).name) for spec in listed}
    for name in list(declared):
        try:
            needs = [Requirement(r) for r in requires(name) or []]
        except PackageNotFoundError:
            continue
        declared |= {
            canonicalize_name(r.name)
            for r in needs
            if r.marker is None and any(s.operator == "==" for s in r.specifier)
        }
    providers = packages_distributions()
    found = []
    for module in sorted(known.values(), key=lambda m: m.name):
        for node in _import_nodes(module.tree):
            if isinstance(node, ast.Import):
                names = [alias.name.split(".")[0] for alias in node.names]
            elif node.level == 0 and node.module:
                names = [node.module.split(".")[0]]
            else:
                continue
            for top in names:
                if top in sys.stdlib_module_names or top in (PACKAGE.name, "__future__"):
                    continue
                dists = {canonicalize_name(d) for d in providers.get(top, [])}
                if not dists & declared:
                    found.append(f"{module.where}:{node.lineno} {top} -> {sorted(dists)}")
    return found


def long_files(limit: int, known: dict[str, Module] | None = None) -> dict[str, int]:
    """Files over ``limit`` lines: path relative to the repository -> lines."""
    known = known or modules()
    return {
        str(m.path.relative_to(PACKAGE.parent)): m.lines for m in known.values() if m.lines > limit
    }


def long_c_files(limit: int, root: Path = PACKAGE) -> dict[str, int]:
    """C files (the jail's bridge) over ``limit`` lines: path relative to the repository -> lines.

    The same bound as a module's: a C file that grows past it is split by concept too.
    """
    found = {}
    for path in sorted([*root.rglob("*.c"), *root.rglob("*.h")]):
        lines = len(path.read_text().splitlines())
        if lines > limit:
            found[str(path.relative_to(root.parent))] = lines
    return found


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


#: How a statement starts: a string of code that begins so is SQL.
_SQL = re.compile(
    r"(SELECT|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE|ALTER|DROP|TRUNCATE"
    r"|LISTEN|NOTIFY|PRAGMA|WITH\s+\w+\s+AS)\s"
)
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of ``tree``'s docstrings: prose, where a word may be a keyword of SQL."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_places(known: dict[str, Module] | None = None) -> set[str]:
    """Every module outside ``butler/store/`` with a string that is a statement of SQL."""
    found = set()
    for module in (known or modules()).values():
        if module.where.startswith("butler/store/"):
            continue
        prose = _docstrings(module.tree)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in prose and _SQL.match(node.value.lstrip()):
                    found.add(module.where)
    return found


def sql_places_documented(architecture: Path = ARCHITECTURE) -> set[str]:
    """The modules outside ``butler/store/`` that docs/architecture.md's "Where SQL lives"
    names as holding SQL."""
    text = architecture.read_text()
    section = text[text.index("### Where SQL lives") :].split("\n#", 1)[0]
    return set(re.findall(r"^- `(butler/[\w/]+\.py)`", section, re.MULTILINE))


if __name__ == "__main__":
    edges = graph()
    for group in cycles(edges):
        print("cycle:", " <-> ".join(group))
    for line in layer_violations(edges):
        print("layers:", line)
    for line in session_path_outside_spawner():
        print("session path outside the spawner:", line)
    for line in fmt_skips_outside_tables():
        print("fmt: skip outside a table:", line)
    for line in private_reaches():
        print("a library's private name outside its adapter:", line)
    for line in undeclared_imports():
        print("an import pyproject.toml does not declare:", line)
    for path in sorted(sql_places() - sql_places_documented()):
        print("SQL outside store/ that docs/architecture.md does not name:", path)
    for path, size in sorted({**long_files(400), **long_c_files(400)}.items()):
        print(f"file over 400 lines: {path} ({size})")
    for where, size in sorted(long_functions(60).items()):
        print(f"function over 60 lines: {where} ({size})")
