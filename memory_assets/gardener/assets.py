"""Assets `gardener_triage` (Phase 0: LifecycleProposals as pending_review) and `gardener_actions`
(Phase 1: the chosen actions, applied with audit and rollback, or in a dry run only reported)."""

import dagster as dg
from pydantic import Field

from memory_assets.common import Table, check_specs, corpus_store, evaluate_contracts, materialize_result
from memory_assets.gardener import checks
from memory_assets.partitions import corpus_partitions
from memory_core.gardener import (
    CATEGORIES,
    ChooserRules,
    GardenerError,
    LLMChooser,
    RuleBasedChooser,
    TriageConfig,
    apply_proposals,
)
from memory_core.gardener.triage.kept import triage_unless_kept
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage

# triage may be scheduled while a build of the same corpus runs: wait for the corpus lock instead of failing
LOCK_WAIT_S = 3600.0
_TRIAGE = TriageConfig()
_RULES = ChooserRules()


class TriageAssetConfig(dg.Config):
    merge_min_score: float = Field(
        default=_TRIAGE.merge_min_score, description="merge candidates from this score"
    )
    split_min_score: float = Field(
        default=_TRIAGE.split_min_score, description="split candidates from this score"
    )
    macro_min_score: float = Field(
        default=_TRIAGE.macro_min_score, description="hub candidates from this score"
    )
    noise_min_score: float = Field(
        default=_TRIAGE.noise_min_score, description="noise candidates from this score"
    )
    max_evidence: int = Field(default=_TRIAGE.max_evidence, description="evidence items read per concept")
    llm_review: bool = Field(
        default=True, description="review the offline proposals with the LLM when one is configured"
    )
    llm_batch_size: int = Field(default=10, description="proposals per LLM review call")

    def triage_config(self) -> TriageConfig:
        return TriageConfig(
            merge_min_score=self.merge_min_score,
            split_min_score=self.split_min_score,
            macro_min_score=self.macro_min_score,
            noise_min_score=self.noise_min_score,
            max_evidence=self.max_evidence,
        )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="gardener",
    deps=["canonical_concepts", "topics", "weighted_links"],
    kinds={"sqlite"},
    pool="llm",
    check_specs=check_specs("gardener_triage", checks.GARDENER_TRIAGE),
    description="Phase 0 triage: merge / split / macro_concept / noise candidates, each scored, citing source "
    "messages, with a rationale, written to lifecycle_proposals as pending_review. Never mutates concepts.",
)
def gardener_triage(
    context: dg.AssetExecutionContext,
    config: TriageAssetConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    home = storage.memory_home()
    client = llm.build_client(home) if config.llm_review else None
    with store.write_lock(timeout_s=LOCK_WAIT_S):
        report = triage_unless_kept(
            store,
            embeddings.cached_embedder(home),
            config.triage_config(),
            client,
            run_id=context.run_id,
            llm_batch_size=config.llm_batch_size,
        )
    context.log.info(f"{store.name}: {report.concepts} live concepts → proposals {report.counts}")
    return materialize_result(
        report,
        store=store,
        asset_key="gardener_triage",
        tables={"top_proposals": Table()},
        paths=("manifest",),
        checks=evaluate_contracts(
            context, "gardener_triage", checks.GARDENER_TRIAGE, store=store, figures=report.as_metadata()
        ),
    )


class RefactorConfig(dg.Config):
    dry_run: bool = Field(
        default=True, description="plan and report only (the store is left untouched); false to apply"
    )
    proposal_ids: list[str] = Field(
        default=[], description="only these proposals (default: every pending one)"
    )
    categories: list[str] = Field(default=[], description=f"only these categories ({', '.join(CATEGORIES)})")
    chooser: str = Field(default="rules", description="rules (conservative, default) | llm (needs an LLM)")
    max_actions: int = Field(default=200, description="stop after this many actions (a bounded run)")
    merge_accept: float = Field(default=_RULES.merge_accept, description="merge without reading the source")
    split_accept: float = Field(default=_RULES.split_accept, description="split without reading the source")
    noise_accept: float = Field(default=_RULES.noise_accept, description="archive without reading the source")
    macro_accept: float = Field(
        default=_RULES.macro_accept, description="refine a hub without reading the source"
    )
    context_min: float = Field(
        default=_RULES.context_min, description="source-context cosine an ambiguous merge needs"
    )
    purity_threshold: float = Field(default=0.70, description="concepts below count as impure")

    def rules(self) -> ChooserRules:
        return ChooserRules(
            merge_accept=self.merge_accept,
            split_accept=self.split_accept,
            noise_accept=self.noise_accept,
            macro_accept=self.macro_accept,
            context_min=self.context_min,
        )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="gardener",
    deps=[gardener_triage],
    kinds={"sqlite"},
    pool="llm",
    check_specs=check_specs("gardener_actions", checks.GARDENER_ACTIONS),
    description="Phase 1 surgical refactoring of pending proposals: refine / merge / split / relate / archive, "
    "each citing source ids, audited in gardener_actions and the action_log, reversible. Dry run by default: "
    "the would-be actions go to a report under <corpus>/gardener/reports.",
)
def gardener_actions(
    context: dg.AssetExecutionContext,
    config: RefactorConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    home = storage.memory_home()
    embedder = embeddings.cached_embedder(home)
    if config.chooser == "rules":
        chooser = RuleBasedChooser(embedder, config.rules())
    elif config.chooser == "llm":
        client = llm.build_client(home)
        if client is None:
            raise GardenerError(
                "chooser=llm needs an LLM: configure the llm resource (api_key / OPENAI_API_KEY)"
            )
        chooser = LLMChooser(client, config.rules())
    else:
        raise GardenerError(f"unknown chooser {config.chooser!r}: use rules or llm")
    with store.write_lock(timeout_s=LOCK_WAIT_S):
        result = apply_proposals(
            store,
            embedder,
            chooser,
            dry_run=config.dry_run,
            proposal_ids=config.proposal_ids or None,
            categories=config.categories or None,
            max_actions=config.max_actions,
            run_id=context.run_id,
            purity_threshold=config.purity_threshold,
            log_fn=context.log.info,
        )
    context.log.info(f"{store.name}: {result.summary()}")
    return materialize_result(
        result,
        store=store,
        asset_key="gardener_actions",
        paths=("report",),
        extra={"report_md": dg.MetadataValue.md(result.markdown())},
        checks=evaluate_contracts(
            context,
            "gardener_actions",
            checks.GARDENER_ACTIONS,
            store=store,
            embedder=embedder,
            figures=result.as_metadata(),
        ),
    )
