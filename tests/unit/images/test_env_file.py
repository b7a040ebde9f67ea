"""``butler images`` sets the images it made in .env, as docker-compose.yml reads them."""

from __future__ import annotations

import pytest

from butler.errors import UserError
from butler.images import node_version, write_env

TAGS = {
    "python": "localhost/butler-stand-in/python:1",
    "node": "localhost/butler-stand-in/node:2",
    "postgres": "localhost/butler-stand-in/postgres:3",
}


def test_each_image_replaces_its_line_and_the_rest_of_env_is_kept(tmp_path):
    env = tmp_path / ".env"
    env.write_text("POSTGRES_PASSWORD=secret\nNODE_IMAGE=node:old\n# a comment\n")
    write_env(env, TAGS)
    assert env.read_text().splitlines() == [
        "POSTGRES_PASSWORD=secret",
        "# a comment",
        "PYTHON_IMAGE=localhost/butler-stand-in/python:1",
        "NODE_IMAGE=localhost/butler-stand-in/node:2",
        "POSTGRES_IMAGE=localhost/butler-stand-in/postgres:3",
    ]


def test_a_new_env_is_the_owner_s_alone(tmp_path):
    env = tmp_path / ".env"
    write_env(env, TAGS)
    assert env.stat().st_mode & 0o777 == 0o600  # the deployment's passwords go in it next


def test_the_node_version_is_the_dockerfile_s_and_a_missing_one_is_one_line(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("ARG NODE_IMAGE=node:20.20.2-bookworm\nFROM ${NODE_IMAGE}\n")
    assert node_version(dockerfile) == "20"
    with pytest.raises(UserError, match="run butler images in the checkout"):
        node_version(tmp_path / "elsewhere" / "Dockerfile")
