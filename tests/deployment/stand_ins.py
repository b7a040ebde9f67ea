"""Base images made on this machine, standing in for the official ones no registry serves here.

Made by ``butler images`` (:mod:`butler.images`), as a person deploying on such a
machine makes them, with the test's engine configuration. Each image's tag is a
digest of its recipe, so a machine makes each once and a changed recipe makes it
anew; delete the ``localhost/butler-stand-in/*`` images to start cold.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from butler.errors import UserError
from butler.images import Engine, make_images
from tests.deployment.engine import environment, podman_path
from tests.helpers import REPO, missing_tool

#: The exit status of ``python -m tests.deployment.stand_ins`` when every stand-in was there.
NOTHING_MADE = 3


def stand_ins(say: Callable[[str], None] = print) -> dict[str, str]:
    """The tags of the stand-ins for the Dockerfile's and compose file's base images."""
    try:
        return make_images(Engine(podman_path(), environment()), REPO / "Dockerfile", say)
    except UserError as exc:
        if "not installed" in str(exc):
            missing_tool(str(exc))
        raise


if __name__ == "__main__":
    # scripts/setup-dev makes them ahead of the suite: the test then finds them by tag.
    made: list[str] = []
    stand_ins(lambda line: (made.append(line), print(line, flush=True)))
    sys.exit(0 if made else NOTHING_MADE)
