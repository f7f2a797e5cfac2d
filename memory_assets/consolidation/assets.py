"""Asset `canonical_concepts`: the Concept Memory Loop over a corpus's new mentions."""

import dagster as dg
from pydantic import Field

from memory_assets.common import corpus_store, md_table
from memory_assets.partitions import corpus_partitions
from memory_core.memory_loop import metrics
from memory_core.memory_loop.concepts import ConceptPolicy
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.retriever import RetrieverWeights
from memory_core.memory_loop.router import REFINE_REASONS, REJECT_REASONS, RouterRules
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.storage import MemoryStorage

_RULES = RouterRules()
# reason code → the action it belongs to (create reasons are the rest)
_ACTION_OF = {
    **{code: "reject" for code in REJECT_REASONS},
    **{code: "refine" for code in REFINE_REASONS},
    "match": "attach",
    "duplicate_span": "attach",
}
_WEIGHTS = RetrieverWeights()
_POLICY = ConceptPolicy()


class ConsolidationConfig(dg.Config):
    """The router's rules and the retriever's fusion weights (defaults tuned for all-MiniLM-L6-v2)."""

    attach_score: float = Field(
        default=_RULES.attach_score, description="fused score from which a compatible concept is a match"
    )
    min_attach_similarity: float = Field(
        default=_RULES.min_attach_similarity, description="…and its cosine at least this"
    )
    alias_attach_similarity: float = Field(
        default=_RULES.alias_attach_similarity,
        description="cosine enough for a match when a title/alias is shared",
    )
    ambiguous_score: float = Field(
        default=_RULES.ambiguous_score,
        description="names: lower edge of the ambiguous band (adjudicator or create)",
    )
    fact_attach_similarity: float = Field(
        default=_RULES.fact_attach_similarity, description="facts: cosine from which it is the same fact"
    )
    fact_alias_similarity: float = Field(
        default=_RULES.fact_alias_similarity, description="facts: cosine enough when the title is shared"
    )
    fact_ambiguous_similarity: float = Field(
        default=_RULES.fact_ambiguous_similarity,
        description="facts: lower edge of the ambiguous band (adjudicator or create)",
    )
    event_window_days: float = Field(
        default=_RULES.event_window_days,
        description="events without a described date match only if told within this many days",
    )
    min_confidence: float = Field(default=_RULES.min_confidence, description="candidates below are rejected")
    refine_margin: float = Field(
        default=_RULES.refine_margin,
        description="how much more confident than a weak concept's evidence a candidate must be to refine it",
    )
    compatible_types: list[str] = Field(
        default=list(_RULES.compatible_types), description="type pairs 'a|b' that may denote the same thing"
    )
    weight_similarity: float = _WEIGHTS.similarity
    weight_lexical: float = _WEIGHTS.lexical
    weight_graph: float = _WEIGHTS.graph
    weight_temporal: float = _WEIGHTS.temporal
    top_k: int = _WEIGHTS.top_k
    shortlist: int = Field(
        default=_WEIGHTS.shortlist, description="nearest concepts by cosine considered before fusion"
    )
    evidence_weight: float = Field(
        default=_POLICY.evidence_weight, description="noisy-OR discount of one piece of evidence"
    )
    active_confidence: float = Field(default=_POLICY.active_confidence, description="concepts below are weak")
    batch_size: int = Field(default=256, description="mentions per transaction")
    high_confidence: float = Field(
        default=0.7, description="concept confidence counted by high-confidence coverage"
    )
    purity_threshold: float = Field(default=0.70, description="concepts below count as impure")

    def loop_config(self) -> LoopConfig:
        return LoopConfig(
            rules=RouterRules(
                attach_score=self.attach_score,
                min_attach_similarity=self.min_attach_similarity,
                alias_attach_similarity=self.alias_attach_similarity,
                ambiguous_score=self.ambiguous_score,
                fact_attach_similarity=self.fact_attach_similarity,
                fact_alias_similarity=self.fact_alias_similarity,
                fact_ambiguous_similarity=self.fact_ambiguous_similarity,
                event_window_days=self.event_window_days,
                min_confidence=self.min_confidence,
                refine_margin=self.refine_margin,
                compatible_types=tuple(self.compatible_types),
            ),
            weights=RetrieverWeights(
                similarity=self.weight_similarity,
                lexical=self.weight_lexical,
                graph=self.weight_graph,
                temporal=self.weight_temporal,
                top_k=self.top_k,
                shortlist=self.shortlist,
            ),
            policy=ConceptPolicy(
                evidence_weight=self.evidence_weight, active_confidence=self.active_confidence
            ),
            batch_size=self.batch_size,
        )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="consolidation",
    deps=["mentions"],
    kinds={"sqlite"},
    description="Concept Memory Loop: each new mention, in time order, is retrieved against the concepts so far and "
    "routed create / attach / refine / reject; every decision goes to the append-only action_log.",
)
def canonical_concepts(
    context: dg.AssetExecutionContext,
    config: ConsolidationConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    embedder = embeddings.cached_embedder(storage.memory_home())
    loop_config = config.loop_config()
    with store.write_lock():
        report = consolidate(store, embedder, loop_config, run_id=context.run_id, log_fn=context.log.info)
    totals = metrics.totals(store)
    coverage = metrics.coverage(store, config.high_confidence)
    purity = metrics.purity(store, embedder, config.purity_threshold)
    grounding = metrics.grounding(store)
    run = metrics.run_figures(report)
    by_type = metrics.by_type_and_state(store)
    per_1k = 1000 * report.seconds / report.processed if report.processed else 0.0
    context.log.info(
        f"{store.name}: {report.processed} mentions → {dict(report.actions)}; {totals['concepts']} concepts, "
        f"purity {purity['purity']}, grounding {grounding['grounding']}"
    )
    return dg.MaterializeResult(
        metadata={
            "mentions_processed": report.processed,
            "created": report.actions["create"],
            "attached": report.actions["attach"],
            "refined": report.actions["refine"],
            "rejected": report.actions["reject"],
            "relations_added": report.relations_added,
            "decision_reasons": md_table(
                [
                    {"action": _ACTION_OF.get(k, "create"), "reason": k, "count": v}
                    for k, v in report.reasons.most_common()
                ]
            ),
            "concepts_by_type_and_state": md_table(
                [
                    {"type": r["type"], **{s: r.get(s, 0) for s in ("active", "weak", "total")}}
                    for r in by_type
                ]
            ),
            "concepts_before": report.concepts_before,
            "concepts": totals["concepts"],
            "concepts_active": totals["concepts_active"],
            "concepts_weak": totals["concepts_weak"],
            "mentions_total": totals["mentions"],
            "mentions_pending": totals["mentions_pending"],
            "compression": totals["compression"],
            "residual_share": totals["residual_share"],
            "run_residual_share": run["run_residual_share"],
            "residual_novelty": run["residual_novelty"],
            "churn": run["churn"],
            "coverage": coverage["coverage"],
            "high_confidence_coverage": coverage["high_confidence_coverage"],
            "purity": purity["purity"],
            "purity_min": purity["purity_min"],
            "impure_concepts": purity["impure_concepts"],
            "evidence_grounding": grounding["grounding"],
            "ungrounded_concepts": grounding["ungrounded_concepts"],
            "embedding_model": embedder.model_name,
            "router_rules": dg.MetadataValue.json(
                {**loop_config.rules.as_dict(), "adjudicator": "none (rule-only)"}
            ),
            "seconds": round(report.seconds, 3),
            "seconds_per_1k_mentions": round(per_1k, 3),
            "embedding_share": round(report.embedding_seconds / report.seconds, 4) if report.seconds else 0.0,
            "retrieval_seconds": round(report.retrieval_seconds, 3),
            "write_seconds": round(report.write_seconds, 3),
            "concept_sample": dg.MetadataValue.md(metrics.concept_sample(store)),
        }
    )
