"""The modules that handle folders a runtime can write open nothing there themselves: every
read, listing and write goes through butler/security/untrusted.py (or its walk of a whole
tree, untrusted_walk.py) (docs/security.md, "The
daemon's hands: the trust map"). Checked from the source, so a new ``read_text`` in one
of them fails here until it goes through the module or is allowed below with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import butler

PACKAGE = Path(butler.__file__).parent

#: Modules that read or write in the butler folder, a repository, a home or a workspace.
HANDLERS = (
    "spawner/prompt.py",
    "builders/plan.py",
    "builders/git.py",
    "sandbox/policy.py",
    "sandbox/git_view.py",
    "security/repositories.py",
    "builders/git_folder.py",
    "runtimes/transcripts.py",
    "runtimes/terminals.py",
    "runtimes/claude_code.py",
    "runtimes/codex.py",
    "runtimes/copilot.py",
    "runtimes/gemini.py",
    "runtimes/opencode.py",
    "runtimes/subprocess_adapter.py",
    "runtimes/mcp_config.py",
    "spawner/interactive.py",
    "spawner/workspace.py",
    "notify/attachment.py",
)
#: The one way in: the untrusted-file module, and its walk of a whole tree.
THROUGH = ("untrusted", "untrusted_walk")
#: Calls that open, list, copy or make a file by path.
TOUCHES = set(
    """open read_text read_bytes write_text write_bytes iterdir glob rglob scandir listdir
    walk connect load copy copyfile copytree mkfifo symlink""".split()
)
#: (module, function, call): why it is not a file a runtime can write.
ALLOWED = {
    ("runtimes/transcripts.py", "_opencode_rows", "write_bytes"): "the daemon's private copy",
    ("runtimes/transcripts.py", "_query_store", "connect"): "that private copy",
    ("spawner/workspace.py", "sweep_leftovers", "glob"): "the temp folder, not a workspace",
}


def touches(module: str, package: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """``(module, function, call)`` of each file-touching call not made through
    ``untrusted``."""
    found: set[tuple[str, str, str]] = set()
    tree = ast.parse((package / module).read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute):
                through = func.value
                if isinstance(through, ast.Name) and through.id in THROUGH:
                    continue
                name = func.attr
            elif isinstance(func, ast.Name):
                name = func.id
            else:
                continue
            if name in TOUCHES:
                found.add((module, function.name, name))
    return found


def test_no_handler_opens_a_file_but_through_the_untrusted_module():
    found = set().union(*(touches(module) for module in HANDLERS))
    assert found - set(ALLOWED) == set(), sorted(found - set(ALLOWED))


def test_the_allow_list_holds_nothing_stale():
    found = set().union(*(touches(module) for module in HANDLERS))
    assert set(ALLOWED) <= found, sorted(set(ALLOWED) - found)


def test_the_scan_sees_a_plain_read_and_lets_the_module_through(tmp_path: Path):
    code = "def f(p, root):\n    untrusted.read(root, p, 1)\n    return open(p).read()\n"
    (tmp_path / "reader.py").write_text(code)
    assert touches("reader.py", tmp_path) == {("reader.py", "f", "open")}
