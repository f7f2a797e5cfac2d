"""What a consolidation run reports: the loop's own account of the run (`LoopReport`) and, after it, the
figures of the concept memory it left (`ConsolidationReport`, the `canonical_concepts` asset's metadata).

- churn (of a run): share of live concepts whose description was rewritten (refined) in the run.
- residual novelty (of a run): mean of 1 − (best cosine to any concept) over the run's rejected candidates.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from memory_core.blas import single_threaded_blas
from memory_core.concepts import metrics
from memory_core.embeddings.base import Embedder
from memory_core.memory_loop.router import REFINE_REASONS, REJECT_REASONS
from memory_core.store.db import CorpusStore

# reason code → the action it belongs to (create reasons are the rest)
_ACTION_OF = {
    **{code: "reject" for code in REJECT_REASONS},
    **{code: "refine" for code in REFINE_REASONS},
    "match": "attach",
    "duplicate_span": "attach",
    "instance_of": "attach",
    "pattern_episode": "attach",
    "theme_episode": "attach",
}
RULE_ONLY = "none (rule-only)"


def action_of(reason_code: str) -> str:
    return _ACTION_OF.get(reason_code, "create")


@dataclass
class LoopReport:
    run_id: str
    pending: int = 0
    processed: int = 0
    actions: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    reject_reasons: Counter = field(default_factory=Counter)
    # adjudicated candidates by outcome: attach / create / reject (the answer), failed, invalid
    adjudications: Counter = field(default_factory=Counter)
    relations_added: int = 0
    # reflective candidates held to the run's end: patterns created on their episodes / left as residuals
    patterns: Counter = field(default_factory=Counter)
    # themes (names in lower case) held to the run's end: named (a concept of it now stands) / residual mentions
    themes: Counter = field(default_factory=Counter)
    concepts_before: int = 0
    concepts_after: int = 0
    refined_concepts: set[str] = field(default_factory=set)
    residual_novelty: list[float] = field(default_factory=list)
    batches: int = 0
    # rows a dead run had left behind the action log, rebuilt from it before this run loaded
    rows_repaired: int = 0
    # the tables stood as the last run of this code and configuration left them: nothing was read
    unchanged_input: bool = False
    seconds: float = 0.0
    embedding_seconds: float = 0.0
    retrieval_seconds: float = 0.0
    write_seconds: float = 0.0
    held_seconds: float = 0.0  # the held reflective candidates, judged after every mention was routed
    approximate_batches: int = 0  # shortlists from the inverted file (past `exact_up_to` concepts)

    def run_figures(self) -> dict:
        """churn, run_residual_share and residual_novelty of this run."""
        novelty = round(float(np.mean(self.residual_novelty)), 4) if self.residual_novelty else 0.0
        return {
            "churn": round(len(self.refined_concepts) / self.concepts_after, 4)
            if self.concepts_after
            else 0.0,
            "run_residual_share": round(self.actions["reject"] / self.processed, 4)
            if self.processed
            else 0.0,
            "residual_novelty": novelty,
        }


@dataclass(frozen=True)
class ConsolidationReport:
    """One run of the loop and the concept memory after it."""

    loop: LoopReport
    totals: dict
    coverage: dict
    purity: dict
    grounding: dict
    by_type_and_state: list[dict]
    concept_sample: str  # Markdown
    embedding_model: str
    router_rules: dict
    adjudicator: str  # "llm:<model>" or RULE_ONLY

    @classmethod
    def measure(
        cls,
        store: CorpusStore,
        embedder: Embedder,
        loop: LoopReport,
        router_rules: dict,
        adjudicator: str = RULE_ONLY,
        high_confidence: float = 0.7,
        purity_threshold: float = 0.70,
    ) -> ConsolidationReport:
        with single_threaded_blas():  # purity's thousands of evidence × reference products
            purity = metrics.purity(store, embedder, purity_threshold)
        return cls(
            loop=loop,
            totals=metrics.totals(store),
            coverage=metrics.coverage(store, high_confidence),
            purity=purity,
            grounding=metrics.grounding(store),
            by_type_and_state=metrics.by_type_and_state(store),
            concept_sample=metrics.concept_sample(store),
            embedding_model=embedder.model_name,
            router_rules=router_rules,
            adjudicator=adjudicator,
        )

    def summary(self) -> str:
        return (
            f"{self.loop.processed} mentions → {dict(self.loop.actions)}; {self.totals['concepts']} concepts, "
            f"purity {self.purity['purity']}, grounding {self.grounding['grounding']}"
        )

    def as_metadata(self) -> dict:
        """Plain figures under the asset's metadata keys; `decision_reasons` and
        `concepts_by_type_and_state` are row lists (shown as tables), `concept_sample` is Markdown."""
        run, totals = self.loop, self.totals
        per_1k = 1000 * run.seconds / run.processed if run.processed else 0.0
        return {
            "mentions_processed": run.processed,
            "created": run.actions["create"],
            "attached": run.actions["attach"],
            "refined": run.actions["refine"],
            "rejected": run.actions["reject"],
            "relations_added": run.relations_added,
            "themes_named": run.themes["named"],
            "theme_mentions_held": run.themes["residual"],
            "rows_repaired": run.rows_repaired,
            "unchanged_input": run.unchanged_input,
            "decision_reasons": [
                {"action": action_of(k), "reason": k, "count": v} for k, v in run.reasons.most_common()
            ],
            "concepts_by_type_and_state": [
                {"type": r["type"], **{s: r.get(s, 0) for s in ("active", "weak", "total")}}
                for r in self.by_type_and_state
            ],
            "concepts_before": run.concepts_before,
            "concepts": totals["concepts"],
            "concepts_active": totals["concepts_active"],
            "concepts_weak": totals["concepts_weak"],
            "mentions_total": totals["mentions"],
            "mentions_pending": totals["mentions_pending"],
            "compression": totals["compression"],
            "residual_share": totals["residual_share"],
            **run.run_figures(),
            "coverage": self.coverage["coverage"],
            "high_confidence_coverage": self.coverage["high_confidence_coverage"],
            "purity": self.purity["purity"],
            "purity_min": self.purity["purity_min"],
            "impure_concepts": self.purity["impure_concepts"],
            "purity_sample": self.purity["purity_sample"],
            "evidence_grounding": self.grounding["grounding"],
            "ungrounded_concepts": self.grounding["ungrounded_concepts"],
            "embedding_model": self.embedding_model,
            "router_rules": {**self.router_rules, "adjudicator": self.adjudicator},
            "adjudicator": self.adjudicator,
            "adjudications": dict(sorted(run.adjudications.items())),
            "seconds": round(run.seconds, 3),
            "seconds_per_1k_mentions": round(per_1k, 3),
            "embedding_share": round(run.embedding_seconds / run.seconds, 4) if run.seconds else 0.0,
            "retrieval_seconds": round(run.retrieval_seconds, 3),
            "approximate_batches": run.approximate_batches,
            "write_seconds": round(run.write_seconds, 3),
            "held_seconds": round(run.held_seconds, 3),
            "concept_sample": self.concept_sample,
        }
