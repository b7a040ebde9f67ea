"""Reading a butler folder into a :class:`ButlerConfig`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from butler.config.errors import validation_error_line
from butler.config.model import ButlerConfig, ButlerSection
from butler.config.notify import with_roster_defaults
from butler.config.overrides import apply_env, env_overrides, put
from butler.config.watch import digest
from butler.errors import ConfigError
from butler.runtimes.registry import adapter_class, available_runtimes
from butler.runtimes.settings import RuntimeConfig
from butler.tomlfile import read_toml


def load_config(config_dir: str | Path, **overrides: Any) -> ButlerConfig:
    """Load and validate the butler in ``config_dir``.

    ``overrides`` are ``[butler]`` keys given on the command line (``port``,
    ``db_url``); they win over the environment, which wins over the file.
    """
    folder = Path(config_dir).expanduser().resolve()
    expected = "expected a butler folder holding butler.toml and CLAUDE.md"
    if not folder.exists():
        raise ConfigError(f"{config_dir}: no such folder; {expected}")
    if not folder.is_dir():
        raise ConfigError(f"{config_dir}: not a folder; {expected}")
    path = folder / "butler.toml"
    if not path.is_file():
        raise ConfigError(f"{folder}: no butler.toml found; {expected}")
    loaded_digest = digest(path)
    data = read_toml(path)
    unknown = sorted(set(data) - {"butler"})
    if unknown:
        raise ConfigError(f"{path}: unknown table '{unknown[0]}'; expected only [butler]")
    table = data.get("butler")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: missing [butler] table; expected one with at least name = ...")
    if "name" not in table:
        raise ConfigError(f"{path}: [butler]: missing required key 'name' (the butler's name)")
    sources: dict[tuple[str, ...], str] = {}
    table = apply_env(table, env_overrides(), sources)
    table = with_roster_defaults(table, folder.parent)
    if overrides.get("port") is not None:
        put(table, ("port",), overrides["port"])
        sources[("port",)] = "--port"
    if overrides.get("db_url"):
        put(table, ("db", "url"), overrides["db_url"])
        sources[("db", "url")] = "--database-url"
    try:
        # Strict: a TOML value has a type; "8100" or true is no port number.
        section = ButlerSection.model_validate(table, strict=True)
    except ValidationError as exc:
        raise ConfigError(validation_error_line(exc, path, sources, ButlerSection)) from None
    where = sources.get(("runtime", "type"), str(path))
    _check_runtime_type(section.runtime, path, where, "butler.runtime")
    for name, table in section.builders.runtimes.items():
        table = table.model_copy(update={"type": name})
        _check_runtime_type(table, path, str(path), f"butler.builders.runtimes.{name}")
    _check_prompt_file(folder, section.runtime)
    return ButlerConfig(butler=section, config_dir=folder, source_digest=loaded_digest)


def _check_prompt_file(folder: Path, runtime: RuntimeConfig) -> None:
    """The butler's system prompt, in a file its runtime reads (Codex: ``AGENTS.md``...)."""
    names = adapter_class(runtime.type, folder.parent).prompt_files
    if not any((folder / name).is_file() for name in names):
        raise ConfigError(f"{folder}: missing {' or '.join(names)} (the butler's system prompt)")


def _check_runtime_type(runtime: RuntimeConfig, path: Path, where: str, key: str) -> None:
    roster = path.parent.parent
    try:
        names = available_runtimes(roster)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if runtime.type not in names:
        raise ConfigError(
            f"{where}: {key}.type: unknown runtime {runtime.type!r}; "
            f"expected one of {', '.join(names)}"
        )
    try:
        adapter_class(runtime.type, roster).validate_config(runtime)
    except ValueError as exc:
        raise ConfigError(f"{where}: {key}.{exc}") from None
