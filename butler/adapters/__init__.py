"""Where butler leans on a library below its public API, one module per library.

Each module says what it relies on, why the public API was not enough (always
speed: a start, or the CPU of every call), and which versions it was checked
against; pyproject.toml pins the library to that range, and a test under
``tests/adapters/`` fails when the library's behaviour under the module changes.
No other module reaches a private name of these libraries (``tests/test_structure.py``).

- :mod:`butler.adapters.fastmcp`: tools parsed once per process, a tool's input
  schema answered from the listing;
- :mod:`butler.adapters.mcp`: the MCP SDK's wire models built at first use;
- :mod:`butler.adapters.uvicorn`: a server whose signals are the caller's.

Typer's per-parameter coercion hook is used by ``butler/cli/plain_params.py``,
which is that library's adapter.
"""
