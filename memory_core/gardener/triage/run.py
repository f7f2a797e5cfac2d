"""Phase 0, Global Lifecycle Triage (docs/architecture.md §4.10): the LifecycleProposals manifest of a corpus.

Inputs: the live concepts, topics when built, sampled evidence and frequency statistics (`inventory`);
offline scoring (`scoring`) and, when an LLM is configured, a batched review (`llm_triage`). Output: the
proposals in `lifecycle_proposals` as pending_review (`proposals`) and the manifest as JSON in the corpus
folder. Safety invariant: triage proposes, it never mutates concepts; the content hash of
canonical_concepts + concept_evidence is taken before and after and a difference is an error.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from memory_core.concepts.store import content_hash
from memory_core.embeddings.base import Embedder
from memory_core.gardener.errors import GardenerError
from memory_core.gardener.metrics import proposal_counts
from memory_core.gardener.proposals import CATEGORIES, ScoredProposal, write_proposals
from memory_core.gardener.triage.inventory import Inventory, load_inventory
from memory_core.gardener.triage.llm_review import LLMTriageStats, review_with_llm
from memory_core.gardener.triage.scoring import (
    TriageConfig,
    macro_candidates,
    manifest,
    merge_candidates,
    noise_candidates,
    noise_signals,
)
from memory_core.gardener.triage.splits import split_candidates
from memory_core.llm.base import LLMClient
from memory_core.store.db import CorpusStore, utcnow

MANIFEST_FILE = ("gardener", "triage_manifest.json")


@dataclass
class TriageReport:
    """A triage run: its proposals, what was written, and the hash proving concepts were left alone."""

    run_id: str
    proposals: list[ScoredProposal]
    concepts: int
    written: Counter
    llm: LLMTriageStats | None
    hash_before: str
    hash_after: str
    manifest_path: str = ""
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)
    proposals_by_status: dict = field(default_factory=dict)  # category -> status -> count, every run's

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(p.category for p in self.proposals)
        return {k: c.get(k, 0) for k in CATEGORIES}

    def mean_scores(self) -> dict[str, float]:
        out = {}
        for k in CATEGORIES:
            scores = [p.score for p in self.proposals if p.category == k]
            out[k] = round(sum(scores) / len(scores), 4) if scores else 0.0
        return out

    def top_proposals(self, limit: int = 25) -> list[dict]:
        top = sorted(self.proposals, key=lambda p: -p.score)[:limit]
        return [
            {
                "category": p.category,
                "score": p.score,
                "rationale": p.rationale,
                "cited": len(p.cited_message_ids),
            }
            for p in top
        ]

    def as_metadata(self) -> dict:
        """Plain figures under the `gardener_triage` asset's metadata keys (`top_proposals` is a row list,
        `manifest` a path)."""
        counts = self.counts
        return {
            "concepts": self.concepts,
            **{f"{k}_candidates": v for k, v in counts.items()},
            "proposals_total": sum(counts.values()),
            "mean_score": self.mean_scores(),
            "written": dict(self.written),
            "proposals_by_status": self.proposals_by_status,
            "concepts_unchanged": self.hash_before == self.hash_after,
            "content_hash_before": self.hash_before,
            "content_hash_after": self.hash_after,
            "llm_review": self.llm.as_dict() if self.llm else {"model": "none (offline scoring only)"},
            "manifest": self.manifest_path,
            "top_proposals": self.top_proposals(),
            "reused": False,  # True: a kept run's figures (`kept.triage_unless_kept`), nothing read
            "seconds": round(self.seconds, 3),
            **self.timings,
        }


def score_all(inv: Inventory, cfg: TriageConfig) -> list[ScoredProposal]:
    """Every category. A concept proposed as noise is proposed for nothing else; a concept to be split, to
    be merged into another, or whose title carries any noise signal is not proposed as a hub."""
    signals = noise_signals(inv, cfg)
    noise = noise_candidates(inv, cfg, signals)
    excluded = {p.concept_ids[0] for p in noise}
    merges = merge_candidates(inv, cfg, excluded)
    splits = split_candidates(inv, cfg, excluded)
    busy = set(signals) | {c for p in merges for c in p.concept_ids[1:]} | {p.concept_ids[0] for p in splits}
    proposals = [*merges, *splits, *macro_candidates(inv, cfg, busy), *noise]
    order = {c: i for i, c in enumerate(CATEGORIES)}
    proposals.sort(key=lambda p: (order[p.category], -p.score, p.concept_ids))
    return proposals


def run_triage(
    store: CorpusStore,
    embedder: Embedder,
    config: TriageConfig | None = None,
    client: LLMClient | None = None,
    run_id: str | None = None,
    llm_batch_size: int = 10,
    now: datetime | None = None,
) -> TriageReport:
    """Score every category, review with the LLM when a client is given, write the proposals and the
    manifest. The caller holds the corpus write lock (proposals are written)."""
    config = config or TriageConfig()
    run_id = run_id or uuid.uuid4().hex
    started = time.perf_counter()
    hash_before = content_hash(store)
    inventory = load_inventory(store, embedder, config.max_evidence)
    t_loaded = time.perf_counter()
    proposals = score_all(inventory, config)
    t_scored = time.perf_counter()
    llm_stats = None
    if client is not None and proposals:
        proposals, llm_stats = review_with_llm(store, client, inventory, proposals, llm_batch_size)
    written = write_proposals(store, proposals, run_id, now or utcnow())
    hash_after = content_hash(store)
    if hash_after != hash_before:
        raise GardenerError(
            f"triage of corpus {store.name!r} changed canonical_concepts/concept_evidence "
            f"({hash_before[:12]} → {hash_after[:12]}): another writer ran without the corpus lock"
        )
    report = TriageReport(
        run_id=run_id,
        proposals=proposals,
        concepts=len(inventory.concepts),
        written=written,
        llm=llm_stats,
        hash_before=hash_before,
        hash_after=hash_after,
        timings={
            "load_seconds": round(t_loaded - started, 3),
            "score_seconds": round(t_scored - t_loaded, 3),
        },
    )
    report.manifest_path = str(write_manifest(store, report))
    report.proposals_by_status = proposal_counts(store)
    report.seconds = time.perf_counter() - started
    return report


def write_manifest(store: CorpusStore, report: TriageReport):
    """The LifecycleProposals manifest (strict model) with each proposal's id, written atomically."""
    path = store.path(*MANIFEST_FILE)
    body = {
        "corpus": store.name,
        "run_id": report.run_id,
        "concepts": report.concepts,
        "counts": report.counts,
        "manifest": manifest(report.proposals).model_dump(),
        "proposal_ids": {
            k: [p.proposal_id(store.name) for p in report.proposals if p.category == k] for k in CATEGORIES
        },
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path
