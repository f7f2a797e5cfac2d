"""How the listing commands print rows (repairs, gardener proposals and actions): the rows as JSON, or one
line each."""

from __future__ import annotations

import json
from collections.abc import Callable

import click


def staging_rows(store, query) -> list[dict]:
    """`query`'s rows from a corpus's staging store, read-only (a corpus never built reads as empty)."""
    with store.staging.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def echo_rows(rows: list[dict], as_json: bool, line: Callable[[dict], str]) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    for r in rows:
        click.echo(line(r))
