"""`memory-os explore [CORPUS]`: the memory explorer, a local read-only web app (memory_explorer)."""

from __future__ import annotations

import click

from memory_cli.ask_cmd import DRIVERS


@click.command("explore")
@click.argument("corpus", required=False)
@click.option("--port", default=8766, show_default=True, help="on 127.0.0.1; the next free one when taken")
@click.option(
    "--dagster-url",
    default="http://127.0.0.1:3000",
    show_default=True,
    help="the Dagster UI the health page links runs to (`memory-os ui`)",
)
@click.option("--driver", type=DRIVERS, default="auto", show_default=True, help="the agent's driver for ask")
@click.pass_context
def explore_command(ctx, corpus, port, dagster_url, driver) -> None:
    """Browse the memory in your browser: search (ask and query_memory side by side, every citation a link),
    conversations with the evidence highlighted, concepts, profiles, the topic map and pipeline health.
    Read-only, on loopback, behind the token in the URL it prints."""
    from memory_core.corpora import registered_source
    from memory_explorer.server import serve

    home = ctx.obj["home"]
    if corpus:
        registered_source(home, corpus)  # a typo is said now, with the closest name, not as a 404 page
    serve(home, corpus, port, dagster_url, driver, say=click.echo)
