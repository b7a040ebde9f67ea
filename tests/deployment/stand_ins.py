"""Base images made on this machine, standing in for the official ones no registry serves here.

Made by ``butler images`` (:mod:`butler.images`), as a person deploying on such a
machine makes them, with the test's engine configuration. Each image's tag is a
digest of its recipe, so a machine makes each once and a changed recipe makes it
anew; delete the ``localhost/butler-stand-in/*`` images to start cold.
"""

from __future__ import annotations

from butler.errors import UserError
from butler.images import Engine, make_images
from tests.deployment.engine import environment, podman_path
from tests.helpers import REPO, missing_tool


def stand_ins() -> dict[str, str]:
    """The tags of the stand-ins for the Dockerfile's and compose file's base images."""
    try:
        return make_images(Engine(podman_path(), environment()), REPO / "Dockerfile", print)
    except UserError as exc:
        if "not installed" in str(exc):
            missing_tool(str(exc))
        raise
