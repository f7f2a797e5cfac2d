"""Contracts of the concept store, evaluated on what is stored: the consolidation and gardener asset checks
wrap these (the gardener re-checks them after changing concepts)."""

from __future__ import annotations

import sys

import memory_core.concepts
import memory_core.ontology
from memory_core.concepts import action_log, metrics
from memory_core.embeddings.base import Embedder
from memory_core.reports import CheckResult
from memory_core.store import memo, schema
from memory_core.store.db import CorpusStore

PURITY_THRESHOLD = 0.70


def evidence_grounding(store: CorpusStore) -> CheckResult:
    """Every evidence span of every live concept equals its message text (and every live concept has one)."""
    g = metrics.grounding(store)
    return CheckResult(
        g["ungrounded_concepts"] == 0,
        {
            "grounding": g["grounding"],
            "concepts": g["concepts"],
            "evidence_spans": g["evidence_spans"],
            "ungrounded_concepts": g["ungrounded_concepts"],
            "awaiting_revision": g["awaiting_revision"],
            "bad_spans": g["bad_spans"],
        },
    )


def concept_purity(
    store: CorpusStore, embedder: Embedder, threshold: float = PURITY_THRESHOLD
) -> CheckResult:
    """Mean purity (the percentile of a concept's evidence pairs among evidence elsewhere, on the seeded sample of
    `memory_core.concepts.purity`; the same sample as the consolidation report's, so its vectors are cache
    hits) above `threshold`."""
    p = metrics.purity(store, embedder, threshold)
    worst = sorted(p["purity_by_concept"].items(), key=lambda kv: kv[1])[:10]
    return CheckResult(
        p["purity"] > threshold,
        {
            "purity": p["purity"],
            "purity_min": p["purity_min"],
            "concepts_scored": p["concepts_scored"],
            "impure_concepts": p["impure_concepts"],
            "purity_sample": p["purity_sample"],
            "least_pure": {cid: round(v, 4) for cid, v in worst},
        },
    )


_REPLAYED_TABLES = tuple(("staging", t) for t in ("action_log", "canonical_concepts", "concept_evidence"))


def _replay_code() -> str:
    """What the replay's result depends on: the concept package (the log, its patches, the concept rows),
    the ontology the rows are parsed into, the store schema, and this module (the figures)."""
    return memo.code_digest([memory_core.concepts, memory_core.ontology, schema, sys.modules[__name__]])


def action_log_replays(store: CorpusStore) -> CheckResult:
    """Replaying the whole ActionLog over an empty store reproduces canonical_concepts and concept_evidence.
    While none of the three tables (nor the replay's code) changed since the last passing replay, its result
    stands (`replayed_now` False; memory_core.store.memo)."""

    def replay() -> dict:
        with store.staging.connect() as conn:
            diff = action_log.replay_differences(conn)
        return {
            "concepts": diff["concepts"],
            "replayed": diff["replayed"],
            "differing": len(diff["differing"]),
            "evidence_rows": diff["evidence_rows"],
            "evidence_equal": diff["evidence_equal"],
            "examples": diff["differing"][:10],
        }

    figures, kept = memo.kept_or_computed(
        store,
        "action_log_replays",
        _REPLAYED_TABLES,
        _replay_code(),
        replay,
        keep_if=lambda f: not f["differing"] and f["evidence_equal"],  # a failure is judged afresh
    )
    return CheckResult(
        not figures["differing"] and figures["evidence_equal"], {**figures, "replayed_now": not kept}
    )
