"""Contracts of the `graph` stage: the graph store compared with the tables it was loaded from (the asset
checks wrap these)."""

from __future__ import annotations

import sys

from sqlalchemy import select

from memory_core.graph.base import GraphCounts, GraphStore
from memory_core.graph.expectations import expected_counts
from memory_core.graph.schema import REFLECTIVE_EDGE_TYPES, REFLECTIVE_LABELS
from memory_core.reports import CheckResult
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore
from memory_core.store.schema import messages

_ID_BATCH = 500
_EXAMPLES = 10


def graph_counts_match_tables(store: CorpusStore, counts: GraphCounts) -> CheckResult:
    """Node and edge counts per type equal what the source/staging tables hold (reflective types only when
    the graph holds reflective nodes)."""
    reflective_loaded = counts.nodes["UserReaction"] > 0
    expected = expected_counts(store, reflective=reflective_loaded)
    mismatches = [
        {"kind": kind, "type": name, "graph": have[name], "tables": want}
        for kind, have, wants, skip in (
            ("node", counts.nodes, expected["nodes"], REFLECTIVE_LABELS),
            ("edge", counts.edges, expected["edges"], REFLECTIVE_EDGE_TYPES),
        )
        for name, want in wants.items()
        if have[name] != want and (reflective_loaded or name not in skip)
    ]
    return CheckResult(
        not mismatches,
        {
            "mismatches": mismatches,
            "nodes": counts.total_nodes,
            "edges": counts.total_edges,
            "reflective_loaded": reflective_loaded,
        },
    )


def evidence_points_to_source_messages(store: CorpusStore, graph: GraphStore) -> CheckResult:
    """Every EVIDENCE_FOR edge starts at a stored source message and, while the evidence is active, its span
    text is that message's text at the offsets (rejected / stale evidence keeps the text it was read as).
    A pass stands while the messages and the graph's load do (a store that knows which export it holds:
    `GraphStore.loaded_export`; memory_core.store.memo)."""
    loaded = graph.loaded_export()
    if loaded is None:
        return _evidence_points_to_messages(store, graph)
    code = memo.code_digest([sys.modules[__name__], store_schema], loaded)
    return memo.kept_check(
        store,
        "graph_evidence",
        (("source", "messages"),),
        code,
        lambda: _evidence_points_to_messages(store, graph),
    )


def _evidence_points_to_messages(store: CorpusStore, graph: GraphStore) -> CheckResult:
    missing, wrong_span, total, examples = 0, 0, 0, []

    def verify(batch: list[tuple[str, dict]]) -> None:
        nonlocal missing, wrong_span
        with store.source.connect() as conn:
            texts = dict(
                conn.execute(
                    select(messages.c.message_id, messages.c.text).where(
                        messages.c.message_id.in_({m for m, _ in batch})
                    )
                ).all()
            )
        for message_id, props in batch:
            text = texts.get(message_id)
            if text is None:
                missing += 1
            elif props.get("status", "active") != "active":
                continue
            elif text[props["span_start"] : props["span_end"]] != props["text"]:
                wrong_span += 1
            else:
                continue
            if len(examples) < _EXAMPLES:
                examples.append(
                    {"message_id": message_id, "mention_id": props["mention_id"], "missing": text is None}
                )

    batch: list[tuple[str, dict]] = []
    for _, message_id, _, _, props in graph.iter_edges("EVIDENCE_FOR"):
        total += 1
        batch.append((message_id, props))
        if len(batch) >= _ID_BATCH:
            verify(batch)
            batch = []
    if batch:
        verify(batch)
    return CheckResult(
        missing == 0 and wrong_span == 0,
        {
            "evidence_edges": total,
            "missing_messages": missing,
            "wrong_spans": wrong_span,
            "examples": examples,
        },
    )
