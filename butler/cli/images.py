"""``butler images``: the compose deployment's base images, where no registry serves them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from butler.cli.common import fail, sub_app
from butler.errors import UserError

app = sub_app()

IMAGES_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler images                 (in the checkout: makes them, then sets them in .env)\n\n"
    "  butler images --print\n\n"
    "For a machine that reaches package mirrors but no image registry: Debian 12 by "
    "debootstrap, then Python, Node (this machine's, the Dockerfile's major version) and "
    "PostgreSQL on it. Run it as root (debootstrap and chroot need it), with podman or "
    "docker installed; images already made are reused. Then: docker compose up --build. "
    "See docs/deployment.md."
)


@app.command("images", epilog=IMAGES_EPILOG)
def images(
    repo: Annotated[
        Path, typer.Option("--repo", help="The checkout holding docker-compose.yml.")
    ] = Path("."),
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the .env lines instead of writing them.")
    ] = False,
) -> None:
    """Make the compose deployment's base images on this machine (no registry needed)."""
    from butler.images import VARIABLES, engine, make_images, write_env

    def say(line: str) -> None:
        typer.echo(line, err=True)

    try:
        tags = make_images(engine(), repo / "Dockerfile", say)
    except UserError as exc:
        fail(str(exc))
    if print_only:
        for name, tag in tags.items():
            typer.echo(f"{VARIABLES[name]}={tag}")
        return
    env_file = repo / ".env"
    write_env(env_file, tags)
    for name, tag in tags.items():
        typer.echo(f"{VARIABLES[name]}={tag}")
    typer.echo(f"set in {env_file}; docker compose up --build now uses them", err=True)
