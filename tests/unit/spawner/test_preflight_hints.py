"""What a person is told to set when a runtime has no credential: where they can act on it."""

from __future__ import annotations

from butler.config import load_config
from butler.spawner.preflight import explain, key_hint
from tests.helpers import write_butler


def test_on_a_host_the_hint_names_the_daemon_s_environment_and_the_butler_s_folder(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("BUTLER_CREDENTIALS_FROM", raising=False)
    config = load_config(write_butler(tmp_path, "health", port=8101))
    hint = key_hint(config)
    assert hint.startswith("set ANTHROPIC_API_KEY (in the daemon's environment")
    assert f"butler credentials set ANTHROPIC_API_KEY -c {config.config_dir}" in hint
    assert "log it in under" in explain(config, "Not logged in · Please run /login")


def test_in_the_compose_deployment_the_hint_names_env_and_no_path_inside_the_container(
    tmp_path, monkeypatch
):
    import yaml

    from tests.helpers import REPO

    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    given = compose["x-butler-env"]["BUTLER_CREDENTIALS_FROM"]  # what every butler service gets
    monkeypatch.setenv("BUTLER_CREDENTIALS_FROM", given)
    config = load_config(write_butler(tmp_path, "health", port=8101))
    assert key_hint(config) == (
        "set ANTHROPIC_API_KEY in .env beside docker-compose.yml, then run docker compose up -d"
    )
    said = explain(config, "Not logged in · Please run /login")
    assert str(config.config_dir) not in said and "/data" not in said
    assert said.endswith("the CLI said: Not logged in · Please run /login")
