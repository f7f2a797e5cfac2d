"""Asset `canonical_concepts`: the Concept Memory Loop over a corpus's new mentions."""

import dagster as dg
from pydantic import Field

from memory_assets.common import (
    Table,
    check_specs,
    corpus_store,
    evaluate_contracts,
    materialize_result,
    run_materializes,
)
from memory_assets.consolidation import checks
from memory_assets.partitions import corpus_partitions
from memory_assets.prefetch import start_build_prefetch
from memory_core.concepts.policy import ConceptPolicy
from memory_core.memory_loop.adjudication import LLMAdjudicator
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.report import RULE_ONLY, ConsolidationReport
from memory_core.memory_loop.retriever import RetrieverWeights
from memory_core.memory_loop.router import RouterRules
from memory_core.progress import progress_to
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage

_RULES = RouterRules()
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
    fact_restatement_overlap: float = Field(
        default=_RULES.fact_restatement_overlap,
        description="facts: content-stem overlap of a restatement in other words (same subject)",
    )
    fact_restatement_similarity: float = Field(
        default=_RULES.fact_restatement_similarity, description="…and its cosine at least this"
    )
    reflective_types: list[str] = Field(
        default=list(_RULES.reflective_types),
        description="types created only on episodes in several conversations",
    )
    pattern_min_episodes: int = Field(
        default=_RULES.pattern_min_episodes, description="episodes a pattern needs"
    )
    pattern_min_conversations: int = Field(
        default=_RULES.pattern_min_conversations, description="conversations its phrasing and episodes span"
    )
    pattern_support_similarity: float = Field(
        default=_RULES.pattern_support_similarity, description="cosine of an episode to the pattern"
    )
    derive_themes: bool = Field(
        default=_RULES.derive_themes, description="read themes off a person's facts (patterns they share)"
    )
    theme_min_episodes: int = Field(default=_RULES.theme_min_episodes, description="facts a theme needs")
    theme_min_conversations: int = Field(
        default=_RULES.theme_min_conversations, description="conversations a theme's facts span"
    )
    theme_max_share: float = Field(
        default=_RULES.theme_max_share,
        description="a stem in more of a person's facts is everything they say",
    )
    theme_name_min_conversations: int = Field(
        default=_RULES.theme_name_min_conversations,
        description="conversations a theme name (a lower-case name: 'camping') is said in before it is a concept",
    )
    instance_types: list[str] = Field(
        default=list(_RULES.instance_types),
        description="types a fact of the same subject supports as an instance",
    )
    instance_similarity: float = Field(
        default=_RULES.instance_similarity, description="cosine of an instance to the concept it supports"
    )
    weight_similarity: float = _WEIGHTS.similarity
    weight_lexical: float = _WEIGHTS.lexical
    weight_graph: float = _WEIGHTS.graph
    weight_temporal: float = _WEIGHTS.temporal
    top_k: int = _WEIGHTS.top_k
    shortlist: int = Field(
        default=_WEIGHTS.shortlist, description="nearest concepts by cosine considered before fusion"
    )
    exact_up_to: int = Field(
        default=_WEIGHTS.exact_up_to,
        ge=0,
        description="past this many concepts the shortlist comes from an inverted file (approximate)",
    )
    nprobe: int = Field(default=_WEIGHTS.nprobe, ge=1, description="inverted lists probed per candidate")
    evidence_weight: float = Field(
        default=_POLICY.evidence_weight, description="noisy-OR discount of one piece of evidence"
    )
    active_confidence: float = Field(default=_POLICY.active_confidence, description="concepts below are weak")
    dependent_evidence_factor: float = Field(
        default=_POLICY.dependent_evidence_factor,
        description="share of a piece of evidence counted for a restatement in a conversation already supporting it",
    )
    support_factor: float = Field(
        default=_POLICY.support_factor,
        description="share counted for an instance supporting a broader concept",
    )
    batch_size: int = Field(default=256, description="mentions per transaction")
    high_confidence: float = Field(
        default=0.7, description="concept confidence counted by high-confidence coverage"
    )
    purity_threshold: float = Field(default=0.70, description="concepts below count as impure")
    llm_adjudicator: bool = Field(
        default=True,
        description="let the LLM decide the ambiguous band when one is configured (else: rule-only, create)",
    )

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
                fact_restatement_overlap=self.fact_restatement_overlap,
                fact_restatement_similarity=self.fact_restatement_similarity,
                reflective_types=tuple(self.reflective_types),
                pattern_min_episodes=self.pattern_min_episodes,
                pattern_min_conversations=self.pattern_min_conversations,
                pattern_support_similarity=self.pattern_support_similarity,
                derive_themes=self.derive_themes,
                theme_min_episodes=self.theme_min_episodes,
                theme_min_conversations=self.theme_min_conversations,
                theme_max_share=self.theme_max_share,
                theme_name_min_conversations=self.theme_name_min_conversations,
                instance_types=tuple(self.instance_types),
                instance_similarity=self.instance_similarity,
            ),
            weights=RetrieverWeights(
                similarity=self.weight_similarity,
                lexical=self.weight_lexical,
                graph=self.weight_graph,
                temporal=self.weight_temporal,
                top_k=self.top_k,
                shortlist=self.shortlist,
                exact_up_to=self.exact_up_to,
                nprobe=self.nprobe,
            ),
            policy=ConceptPolicy(
                evidence_weight=self.evidence_weight,
                active_confidence=self.active_confidence,
                dependent_evidence_factor=self.dependent_evidence_factor,
                support_factor=self.support_factor,
            ),
            batch_size=self.batch_size,
        )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="consolidation",
    deps=["mentions"],
    kinds={"sqlite"},
    pool="llm",
    check_specs=check_specs("canonical_concepts", checks.CANONICAL_CONCEPTS),
    description="Concept Memory Loop: each new mention, in time order, is retrieved against the concepts so far and "
    "routed create / attach / refine / reject (an LLM adjudicates the ambiguous band when one is configured); "
    "every decision goes to the append-only action_log.",
)
def canonical_concepts(
    context: dg.AssetExecutionContext,
    config: ConsolidationConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    home = storage.memory_home()
    embedder = embeddings.cached_embedder(home)
    client = llm.build_client(home) if config.llm_adjudicator else None
    adjudicator = LLMAdjudicator(client, store) if client is not None else None
    loop_config = config.loop_config()
    if not run_materializes(context, "mentions"):  # else extraction started it
        start_build_prefetch(context, store, embeddings)  # later stages' vectors, beside the loop
    with store.write_lock(), progress_to(context.log.info):
        run = consolidate(
            store, embedder, loop_config, context.run_id, adjudicator=adjudicator, log_fn=context.log.info
        )
    report = ConsolidationReport.measure(
        store,
        embedder,
        run,
        loop_config.rules.as_dict(),
        adjudicator=adjudicator.name if adjudicator else RULE_ONLY,
        high_confidence=config.high_confidence,
        purity_threshold=config.purity_threshold,
    )
    context.log.info(f"{store.name}: {report.summary()}")
    return materialize_result(
        report,
        store=store,
        asset_key="canonical_concepts",
        tables={"decision_reasons": Table(), "concepts_by_type_and_state": Table()},
        extra={"concept_sample": dg.MetadataValue.md(report.concept_sample)},
        checks=evaluate_contracts(
            context, "canonical_concepts", checks.CANONICAL_CONCEPTS, store=store, embedder=embedder
        ),
    )
