"""`memory-os reactions purge|allow|residue`: the reflective store's purge, everywhere its data reached
(`memory_core.extraction.reflective_purge`, and Dagster's metadata through `memory_assets`), its
tombstones, and what is left."""

from __future__ import annotations

import json

import click


def _graphs(store) -> list:
    """The corpus's graph stores that may hold UserReaction nodes: its embedded graph when one was built,
    and Neo4j when NEO4J_URI is set."""
    from memory_core.graph import GraphSettings, embedded_graph_path, open_graph
    from memory_core.settings import NEO4J_URI

    graphs = []
    if embedded_graph_path(store).exists():
        graphs.append(open_graph(store))
    if NEO4J_URI.get():
        graphs.append(open_graph(store, GraphSettings(backend="neo4j")))
    return graphs


def _close(graphs: list) -> None:
    for graph in graphs:
        graph.close()


@click.group("reactions")
def reactions_group() -> None:
    """The reflective store (user reactions): retention, purge, tombstones."""


@reactions_group.command("purge")
@click.argument("name")
@click.option("--expired-only", is_flag=True, help="only reactions past their retention (expires_at)")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
@click.pass_context
def reactions_purge(ctx, name, expired_only, yes) -> None:
    """Purge corpus NAME's user reactions from every place they reached: the reflective store, the LLM
    cache, residuals, the graph, reflective concepts, Dagster metadata; tombstone their messages."""
    from memory_assets.extraction.reflective_metadata import redact_state_names, stored_state_names
    from memory_assets.instance import memory_instance
    from memory_core.corpora import registered_source
    from memory_core.extraction.reflective import reaction_count
    from memory_core.extraction.reflective_purge import purge_reflective
    from memory_core.llm.cache import ResponseCache

    home = ctx.obj["home"]
    registered_source(home, name)
    store = home.corpus(name)
    if not expired_only and not yes:
        click.confirm(f"purge all {reaction_count(store)} reactions of {name}?", abort=True)
    with store.write_lock(timeout_s=30):
        graphs = _graphs(store)
        try:
            report = purge_reflective(
                store, ResponseCache.in_dir(home.cache_dir), graphs, expired_only=expired_only
            )
        finally:
            _close(graphs)
    instance = memory_instance(home)
    redacted = redact_state_names(instance, name)
    report.residue["dagster_metadata"] = stored_state_names(instance, name)
    click.echo(
        report.summary(name) + (f" ({redacted} Dagster metadata entries redacted)" if redacted else "")
    )
    if report.tombstones:
        click.echo(
            f"a rebuild will not extract reactions on those messages again; `memory-os reactions allow {name}` lifts that"
        )


@reactions_group.command("allow")
@click.argument("name")
@click.pass_context
def reactions_allow(ctx, name) -> None:
    """Lift the purge's tombstones: later extractions of corpus NAME may write reactions again."""
    from memory_core.corpora import registered_source
    from memory_core.extraction.reflective import lift_tombstones

    home = ctx.obj["home"]
    registered_source(home, name)
    store = home.corpus(name)
    with store.write_lock(timeout_s=30):
        lifted = lift_tombstones(store)
    click.echo(f"{name}: {lifted} tombstones lifted; re-extracted segments may hold reactions again")


@reactions_group.command("residue")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def reactions_residue(ctx, name, as_json) -> None:
    """What reflective data of corpus NAME is where (after a purge: 0 everywhere)."""
    from memory_assets.extraction.reflective_metadata import stored_state_names
    from memory_assets.instance import memory_instance
    from memory_core.corpora import registered_source
    from memory_core.extraction.reflective_purge import residue
    from memory_core.llm.cache import ResponseCache

    home = ctx.obj["home"]
    registered_source(home, name)
    store = home.corpus(name, readonly=True)
    graphs = _graphs(store)
    try:
        left = residue(store, ResponseCache.in_dir(home.cache_dir), graphs)
    finally:
        _close(graphs)
    left["dagster_metadata"] = stored_state_names(memory_instance(home), name)
    click.echo(json.dumps(left) if as_json else ", ".join(f"{k} {v}" for k, v in left.items()))
