"""``butler notify``: check that the butler's channels reach its person."""

from __future__ import annotations

from typing import Annotated

import typer

from butler.cli.common import ConfigOption, fail, load, run, sub_app

app = sub_app()
notify_app = sub_app(help="The channels through which the butler reaches its person.")
app.add_typer(notify_app, name="notify")

ChannelOption = Annotated[
    str | None,
    typer.Option("--channel", help="Only this channel (a name from \\[butler.notify.channels])."),
]


@notify_app.command(
    "test",
    epilog="[bold]Examples[/bold]\n\n"
    "  butler notify test --config roster/health\n\n"
    "  butler notify test --config roster/health --channel phone\n\n"
    "Channels are named in \\[butler.notify.channels] of butler.toml (or the roster's "
    "shared/notify.toml); their secrets come from butler credentials set NAME. "
    "See docs/notify.md.",
)
def test(config: ConfigOption = None, channel: ChannelOption = None) -> None:
    """Send a test message on each channel; say per channel: delivered, or the service's error."""
    cfg = load(config)
    if not cfg.butler.notify.channels:
        fail(
            f"{cfg.name} has no channels; name one under [butler.notify.channels] in "
            f"{cfg.config_dir / 'butler.toml'} (see docs/notify.md)"
        )

    async def go() -> list[tuple[str, bool, str | None]]:
        import os

        from butler.notify.notifier import credentials_named, test_channels
        from butler.store.credentials import CredentialStore

        if all(os.environ.get(name) for name in credentials_named(cfg, channel)):
            # Nothing to read from the database: it is not opened (an embedded one would
            # start first, for seconds, to answer nothing).
            tests = await test_channels(cfg, CredentialStore(None), channel)
        else:
            from butler.store.opening import open_store

            opened = await open_store(cfg.glance())
            try:
                tests = await test_channels(cfg, CredentialStore(opened.db), channel)
            finally:
                await opened.close()
        return [(t.channel, t.outcome.delivered, t.outcome.error) for t in tests]

    results = run(go())
    width = max(len(name) for name, _, _ in results)
    for name, delivered, error in results:
        typer.echo(f"{name:<{width}}  " + ("delivered" if delivered else f"not delivered: {error}"))
    if not all(delivered for _, delivered, _ in results):
        raise typer.Exit(1)
