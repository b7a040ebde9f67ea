"""The one build step pyproject.toml cannot declare: the jail's bridge, compiled into the package.

Everything else about the package is in pyproject.toml. ``pip install`` (a wheel, or
``pip install -e .`` for a checkout) runs ``build_bridge``, which compiles
``butler/sandbox/bridge_*.c`` with the machine's C compiler into
``butler/sandbox/bin/`` (butler/sandbox/bridge_binary.py says how and why); without a
compiler the install stops, naming the one to install. The wheel holds a binary, so it
is tagged for its platform.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import ClassVar

from setuptools import Command, Distribution, setup
from setuptools.command.build import build
from setuptools.errors import ExecError

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools before 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
BRIDGE = HERE / "butler" / "sandbox" / "bridge_binary.py"


def _bridge() -> ModuleType:
    """butler/sandbox/bridge_binary.py, by its path: butler's dependencies are not here."""
    spec = importlib.util.spec_from_file_location("butler_bridge_binary", BRIDGE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildBridge(Command):
    """Compile the jail's bridge into the package (in place for an editable install)."""

    description = "compile the jail's bridge (butler/sandbox/bridge_*.c) into the package"
    user_options: ClassVar[list[tuple[str, str | None, str]]] = []

    def initialize_options(self) -> None:
        self.build_lib: str | None = None
        self.editable_mode = False
        self.built: list[str] = []

    def finalize_options(self) -> None:
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _folder(self, bridge: ModuleType) -> Path:
        root = HERE if self.editable_mode else Path(self.build_lib or "build")
        return root / "butler" / bridge.BINARY_FOLDER

    def run(self) -> None:
        bridge = _bridge()
        try:
            self.built = [str(bridge.build(self._folder(bridge)))]
        except bridge.BuildError as exc:
            raise ExecError(f"butler: {exc}") from None

    def get_outputs(self) -> list[str]:
        return [] if self.editable_mode else self.built

    def get_output_mapping(self) -> dict[str, str]:
        return {}

    def get_source_files(self) -> list[str]:
        compiled, _ = _bridge().sources()
        headers = sorted(BRIDGE.parent.glob("bridge*.h"))
        return [str(p.relative_to(HERE)) for p in [*compiled, *headers]]


class Build(build):
    sub_commands: ClassVar[list[tuple[str, object]]] = [
        *build.sub_commands,
        ("build_bridge", None),
    ]


class WithBinary(Distribution):
    """A distribution holding a binary: installed and tagged as a platform's."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for this platform (it holds the bridge's binary), for any Python 3."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    distclass=WithBinary,
    cmdclass={"build": Build, "build_bridge": BuildBridge, "bdist_wheel": PlatformWheel},
)
