"""`memory-os facts NAME`: the fact histories of a corpus — what is current, what it replaced and when — as
of a valid time (`--as-of`) and as memory believed them at a system time (`--believed-at`)."""

from __future__ import annotations

import json
from datetime import datetime

import click


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
    from memory_query.facts import fact_history
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
