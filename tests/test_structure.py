"""The package keeps its shape: no import cycle, layers point down, one session path,
small files and functions, code the formatter lays out."""

from __future__ import annotations

from tests import structure


def test_no_import_cycle():
    found = structure.cycles(structure.graph())
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(g) for g in found)


# What runtimes/ may import is checked in tests/runtimes/test_layering.py.


def test_every_module_has_a_layer():
    unplaced = []
    for name in structure.modules():
        try:
            structure.unit_of(name)
        except KeyError as exc:
            unplaced.append(exc.args[0])
    assert unplaced == []


def test_imports_point_down_the_declared_layers():
    assert structure.layer_violations(structure.graph()) == []


def test_only_the_spawner_records_sessions_builds_runtimes_and_starts_jails():
    assert structure.session_path_outside_spawner() == []


def test_no_fmt_skip_outside_a_table():
    assert structure.fmt_skips_outside_tables() == []


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


def test_no_c_file_over_400_lines():
    assert structure.long_c_files(400) == {}


def test_the_checker_finds_a_long_c_file(tmp_path):
    package = tmp_path / "butler"
    package.mkdir()
    (package / "short.c").write_text("int x;\n" * 400)
    (package / "long.h").write_text("int y;\n" * 401)
    assert structure.long_c_files(400, package) == {"butler/long.h": 401}


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


def test_the_checker_finds_an_upward_and_a_sideways_import(tmp_path):
    package = tmp_path / "butler"
    for folder in ("spawner", "builders", "tools", "dashboard"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "spawner" / "core.py").write_text("from butler.builders import plan\n")
    (package / "builders" / "plan.py").write_text("from butler.spawner import core\n")
    (package / "tools" / "context.py").write_text("")
    (package / "dashboard" / "view.py").write_text("from butler.tools.context import x\n")
    found = structure.layer_violations(structure.graph(structure.modules(package)))
    assert found == [
        "butler.dashboard.view imports butler.tools.context, beside it in its layer (sideways)",
        "butler.spawner.core imports butler.builders.plan, a layer above it (upward)",
    ]


def test_the_checker_finds_a_builder_doing_the_spawners_work(tmp_path):
    package = tmp_path / "butler"
    (package / "builders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "builders" / "__init__.py").write_text("")
    (package / "builders" / "manager.py").write_text(
        "from butler.sandbox import open_jail\n"
        "async def spawn(spawner):\n"
        "    await spawner.lifecycle.running('id')\n"
    )
    found = structure.session_path_outside_spawner(structure.modules(package))
    assert found == [
        "butler/builders/manager.py:1 starts a jail (open_jail)",
        "butler/builders/manager.py:3 creates or completes a session row (lifecycle)",
    ]


def test_a_table_may_keep_its_layout_and_code_may_not(tmp_path):
    package = tmp_path / "butler"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        'FLAGS = ["--a", "1",\n         "--b", "2"]  # fmt: skip\n'
        "def f(x, y): return g(x,\n                     y)  # fmt: skip\n"
    )
    assert structure.fmt_skips_outside_tables(structure.modules(package)) == ["butler/a.py:4"]


def test_no_private_name_of_a_library_outside_its_adapter():
    assert structure.private_reaches() == []


def test_the_checker_finds_a_private_name_of_a_library_outside_its_adapter(tmp_path):
    package = tmp_path / "butler"
    (package / "adapters").mkdir(parents=True)
    for init in (package / "__init__.py", package / "adapters" / "__init__.py"):
        init.write_text("")
    reaching = (
        "from fastmcp import FastMCP\n"
        "from mcp_types._wire_base import WireModel\n"
        "def f(mcp: FastMCP, box):\n"
        "    mcp._mcp_server.x = box._own\n"
        "class Box:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
    )
    (package / "server.py").write_text(reaching)
    (package / "adapters" / "fastmcp.py").write_text(reaching.replace("mcp_types", "x"))
    sources = {"fastmcp": "self._mcp_server = LowLevelServer()", "mcp_types": ""}
    found = structure.private_reaches(structure.modules(package), sources)
    assert found == [
        "butler/server.py:2 mcp_types: mcp_types._wire_base",
        "butler/server.py:4 fastmcp: ._mcp_server",
    ]


def test_every_third_party_import_is_declared_in_pyproject():
    assert structure.undeclared_imports() == []


def test_the_checker_finds_an_import_pyproject_does_not_declare(tmp_path):
    package = tmp_path / "butler"
    package.mkdir()
    (package / "__init__.py").write_text("")
    # fastmcp's package is fastmcp-slim's, which the fastmcp distribution pins exactly.
    (package / "a.py").write_text("import json\nimport fastmcp\nimport httpx\nimport uvicorn\n")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["fastmcp==4.1.6", "uvicorn>=0.54"]\n')
    found = structure.undeclared_imports(structure.modules(package), pyproject)
    assert found == ["butler/a.py:3 httpx -> ['httpx']"]


def test_sql_outside_store_is_only_where_the_architecture_says():
    assert structure.sql_places() == structure.sql_places_documented()


def test_the_checker_finds_sql_outside_store_and_reads_the_documented_places(tmp_path):
    package = tmp_path / "butler"
    (package / "store").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "store" / "rows.py").write_text('Q = "SELECT 1"\n')
    (package / "cli.py").write_text('"""SELECT words in prose are not SQL."""\nQ = "SELECT 1"\n')
    (package / "talk.py").write_text('M = "the queue\'s LISTEN is back"\n')
    assert structure.sql_places(structure.modules(package)) == {"butler/cli.py"}
    architecture = tmp_path / "architecture.md"
    architecture.write_text(
        "### Where SQL lives\n\nIn store/, but:\n\n- `butler/cli.py`: why.\n\n## Next\n"
        "- `butler/talk.py`: another section.\n"
    )
    assert structure.sql_places_documented(architecture) == {"butler/cli.py"}
