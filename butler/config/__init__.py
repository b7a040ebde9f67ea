"""A butler's configuration: ``roster/<name>/butler.toml`` plus the environment.

A butler is a folder holding ``butler.toml``, ``CLAUDE.md`` (its system prompt)
and optionally ``skills/``. :func:`load_config` reads the folder into a typed,
validated :class:`ButlerConfig`; every mistake becomes one :class:`ConfigError`
line naming the file, the key, what was expected and what was found.

The package holds one module per table (``tables``, ``builders``, ``sandbox``,
``schedule``, ``notify``), the ``[butler]`` table and a loaded butler (``model``), the
environment's overrides and the loader. What other modules use is named here.
"""

from butler.config.builders import BuildersConfig
from butler.config.loading import load_config
from butler.config.model import ButlerConfig, ButlerSection
from butler.config.notify import NotifyConfig
from butler.config.sandbox import SandboxConfig
from butler.config.schedule import ScheduleConfig
from butler.config.tables import DbConfig, EnvConfig, MemoryConfig, ModuleConfig, TelemetryConfig
from butler.runtimes.settings import RuntimeConfig

__all__ = [
    "BuildersConfig",
    "ButlerConfig",
    "ButlerSection",
    "DbConfig",
    "EnvConfig",
    "MemoryConfig",
    "ModuleConfig",
    "NotifyConfig",
    "RuntimeConfig",
    "SandboxConfig",
    "ScheduleConfig",
    "TelemetryConfig",
    "load_config",
]
