"""Tool tests build spawners the same way the spawner tests do."""

from tests.spawner.conftest import make_spawner  # noqa: F401  (a fixture)
