"""Helpers shared by the stage modules (no stage logic here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import dagster as dg

from memory_core.store.db import CorpusStore
from memory_resources.storage import MemoryStorage


def corpus_store(
    context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> CorpusStore:
    return storage.corpus(context.partition_key)


def md_table(
    rows: Sequence[Mapping], columns: Iterable[str] | None = None, limit: int = 30
) -> dg.MetadataValue:
    """A Markdown table for the asset's metadata panel."""
    rows = list(rows)[:limit]
    if not rows:
        return dg.MetadataValue.md("_none_")
    cols = list(columns or rows[0].keys())

    def cell(v: object) -> str:
        text = str(v).replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= 160 else text[:157] + "…"

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return dg.MetadataValue.md("\n".join(lines))


def check(
    passed: bool, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR, **metadata
) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=bool(passed), severity=severity, metadata=metadata)
