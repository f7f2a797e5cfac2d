"""The revision layer's commands: `memory-os facts NAME` (the fact histories — what is current, what it
replaced and when — as of a valid time `--as-of` and as memory believed them at a system time
`--believed-at`) and `memory-os repairs list|rollback NAME` (the repair queue and its exact rollback)."""

from __future__ import annotations

import json
from datetime import datetime

import click

from memory_cli.listing import echo_rows, staging_rows


def _when(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not an ISO date or time") from exc


def _day(iso: str | None) -> str:
    return iso[:10] if iso else "now"


def _render(groups: list[dict]) -> list[str]:
    lines = []
    for g in groups:
        lines.append(
            f"{g['subject']} · {g['slot']}: {g['current'] if g['current'] is not None else '(none current)'}"
        )
        for s in g["states"]:
            by = s["superseded_by"]
            replaced = (
                f" → {by['value']} {by['cite']}"
                if by and by.get("value")
                else (f" by {by['cite']}" if by else "")
            )
            evidence = " ".join(e["cite"] for e in s["evidence"][:3])
            lines.append(
                f"  {_day(s['valid_from'])} → {_day(s['valid_until']):<10} {s['value'][:40]:<40} {s['status']}{replaced}"
                f"  {evidence}"
            )
        for c in g["not_in_history"]:
            lines.append(
                f"  (not in the history) {c['value'][:40]:<40} {c['status']}: {c['reason'][:80]} {c['cite']}"
            )
    return lines


@click.command("facts")
@click.argument("name")
@click.option("--subject", help="only subjects whose name contains this (e.g. user, Anna)")
@click.option("--slot", help="only slot keys starting with this (e.g. residence, possession:cat)")
@click.option("--as-of", help="ISO date: the facts true then (valid time)")
@click.option("--believed-at", help="ISO date or time: the facts as memory believed them then (system time)")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def facts_command(ctx, name, subject, slot, as_of, believed_at, as_json) -> None:
    """Fact histories of corpus NAME per (subject, slot): current value, superseded ones, their evidence."""
    from memory_core.corpora import registered_source
    from memory_query.fact_history import fact_history
    from memory_query.pool import reading

    home = ctx.obj["home"]
    registered_source(home, name)
    with reading(name, home) as reader:
        groups = fact_history(reader, subject, slot, as_of=_when(as_of), believed_at=_when(believed_at))
    if as_json:
        click.echo(
            json.dumps(
                {"corpus": name, "as_of": as_of, "believed_at": believed_at, "facts": groups}, indent=2
            )
        )
        return
    if not groups:
        click.echo(
            f"{name}: no fact histories"
            + (" matching" if subject or slot else "")
            + " (build the fact_states asset)"
        )
        return
    header = f"{name}: {len(groups)} fact histories"
    header += f", true as of {as_of}" if as_of else ""
    header += f", as memory believed them at {believed_at}" if believed_at else ""
    click.echo(header)
    for line in _render(groups):
        click.echo(line)


@click.group("repairs")
def repairs_group() -> None:
    """The repair queue: what the repair worker did (or could not do), and rollback."""


@repairs_group.command("list")
@click.argument("name")
@click.option("--status", help="only this status (queued, done, escalated, rolled_back)")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def repairs_list(ctx, name, status, as_json) -> None:
    """Repair queue rows of corpus NAME with their action, note and citations."""
    from sqlalchemy import select

    from memory_core.corpora import registered_source
    from memory_core.store.schema import repair_queue

    home = ctx.obj["home"]
    registered_source(home, name)
    rq = repair_queue.c
    query = select(rq.repair_id, rq.concept_id, rq.trust, rq.status, rq.action, rq.note, rq.run_id,
                   rq.cited_message_ids, rq.enqueued_at, rq.resolved_at).order_by(rq.repair_id)  # fmt: skip
    if status:
        query = query.where(rq.status == status)
    echo_rows(
        staging_rows(home.corpus(name, readonly=True), query),
        as_json,
        lambda r: (
            f"{r['repair_id']:>4} {r['concept_id']} {r['trust']:<8} {r['status']:<11} "
            f"{r['action'] or '':<16} {(r['note'] or '')[:110]}"
        ),
    )


@repairs_group.command("rollback")
@click.argument("name")
@click.argument("repair_ids", nargs=-1, type=int)
@click.option("--run", "run_id", help="every applied repair of this run (newest first)")
@click.pass_context
def repairs_rollback(ctx, name, repair_ids, run_id) -> None:
    """Restore the state before repair(s) REPAIR_IDS (or a whole run) of corpus NAME exactly."""
    from memory_core.concepts.store import content_hash
    from memory_core.corpora import registered_source
    from memory_core.revision.repair import rollback_repairs

    if bool(repair_ids) == bool(run_id):
        raise click.UsageError("give REPAIR_ID(s) or --run RUN_ID")
    home = ctx.obj["home"]
    registered_source(home, name)
    store = home.corpus(name)
    with store.write_lock(timeout_s=30):
        before = content_hash(store)
        done = rollback_repairs(store, run_id=run_id, repair_ids=list(repair_ids) or None)
        after = content_hash(store)
    for d in done:
        click.echo(f"rolled back repair {d['repair_id']} ({d['action']}, {len(d['concepts'])} concepts)")
    click.echo(f"concept state hash {before[:16]} → {after[:16]}")
