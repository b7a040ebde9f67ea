"""Whether runtimes are jailed is decided in one place, for butlers and ``ask`` alike."""

from __future__ import annotations

import pytest

from butler.config import SandboxConfig
from butler.errors import ConfigError
from butler.sandbox import requested_mode, resolve_mode


def test_butler_sandbox_overrides_the_file(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BUTLER_SANDBOX", "none")
    assert requested_mode(SandboxConfig(mode="bwrap")) == "none"
    assert resolve_mode(SandboxConfig(mode="bwrap")) == "none"


def test_an_empty_butler_sandbox_leaves_the_file_its_say(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BUTLER_SANDBOX", "")
    assert requested_mode(SandboxConfig(mode="none")) == "none"
    assert requested_mode(SandboxConfig()) == "auto"


def test_a_bad_butler_sandbox_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BUTLER_SANDBOX", "off")
    with pytest.raises(ConfigError) as refused:
        resolve_mode(SandboxConfig())
    assert str(refused.value) == (
        "environment variable BUTLER_SANDBOX: expected one of auto, bwrap, none, found 'off'"
    )
