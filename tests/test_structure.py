"""The package keeps its shape: no import cycle, layers point down, small files and functions."""

from __future__ import annotations

from tests import structure


def test_no_import_cycle():
    found = structure.cycles(structure.graph())
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(g) for g in found)


# What runtimes/ may import is checked in tests/runtimes/test_layering.py.


def test_cli_groups_import_only_common():
    edges = structure.graph()
    assembly = {"butler.cli.common", "butler.cli.__main__"}
    groups = [m for m in edges if m.startswith("butler.cli.") and m not in assembly]
    assert groups, "no command group modules found"
    for module in groups:
        others = {t for t in edges[module] if t == "butler.cli" or t.startswith("butler.cli.")}
        assert others <= {"butler.cli.common"}, f"{module} imports {sorted(others)}"


def test_no_file_over_400_lines():
    assert structure.long_files(400) == {}


def test_no_function_over_60_lines():
    assert structure.long_functions(60) == {}


def test_the_checker_finds_a_cycle_and_a_long_function(tmp_path):
    package = tmp_path / "butler"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from butler import b\n")
    body = "\n".join("    x = 1" for _ in range(61))
    (package / "b.py").write_text(f"def f():\n    from butler.a import g\n{body}\n")
    known = structure.modules(package)
    assert structure.cycles(structure.graph(known)) == [["butler.a", "butler.b"]]
    assert structure.long_functions(60, known) == {"butler/b.py:f": 63}
