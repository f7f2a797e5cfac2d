"""Contracts and quality targets of the gardener as partitioned asset checks with explicit severity (the
logic is in core: `memory_core.gardener.checks`, `memory_core.concepts.checks`)."""

import dagster as dg

from memory_assets.common import corpus_check, corpus_store, report_figures
from memory_assets.gardener.assets import gardener_actions as actions_asset
from memory_assets.gardener.assets import gardener_triage as triage_asset
from memory_core.concepts import checks as concept_checks
from memory_core.gardener import checks
from memory_core.gardener.checks import ANCHORED_TARGET
from memory_core.reports import CheckResult
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.storage import MemoryStorage

PURITY_TARGET = concept_checks.PURITY_THRESHOLD
# quality targets: they flag, they do not stop anything
WARN = dg.AssetCheckSeverity.WARN


def _latest_metadata(context: dg.AssetCheckExecutionContext, key: dg.AssetKey) -> dict:
    """Metadata of the asset's latest materialisation of this partition (the run's own, when it just ran)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[context.partition_key]), limit=1
    ).records
    if not records:
        return {}
    return report_figures(records[0].asset_materialization.metadata)


@corpus_check(
    triage_asset,
    description="triage never mutates concepts: canonical_concepts + concept_evidence hash equal before/after",
)
def triage_left_concepts_unchanged(context: dg.AssetCheckExecutionContext) -> CheckResult:
    return checks.triage_left_concepts_unchanged(_latest_metadata(context, triage_asset.key))


@corpus_check(
    triage_asset,
    description="every pending proposal has a score in [0, 1], a rationale, existing concepts and cites at "
    "least one source message that exists",
)
def proposals_cite_sources(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return checks.proposals_cite_sources(corpus_store(context, storage))


@corpus_check(
    actions_asset,
    blocking=True,
    description="100% traceability: every applied merge/split cites source message ids that exist",
)
def merge_split_traceability(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return checks.merge_split_traceability(corpus_store(context, storage))


@corpus_check(
    actions_asset,
    description="replaying the action_log (memory loop + gardener) reproduces canonical_concepts and "
    "concept_evidence exactly",
)
def gardened_log_replays(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return concept_checks.action_log_replays(corpus_store(context, storage))


@corpus_check(
    actions_asset,
    severity=WARN,
    description="the latest Phase 1 run had no execution errors (refused actions, failed LLM decisions)",
)
def no_execution_errors(context: dg.AssetCheckExecutionContext) -> CheckResult:
    return checks.no_execution_errors(_latest_metadata(context, actions_asset.key))


@corpus_check(
    actions_asset,
    severity=WARN,
    description=f"anchored rate > {ANCHORED_TARGET}: share of segments linked to refined concepts "
    "(support ≥ 2 or revised)",
)
def anchored_rate_target(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return checks.anchored_rate_target(corpus_store(context, storage))


@corpus_check(actions_asset, severity=WARN, description=f"concept purity > {PURITY_TARGET} after gardening")
def concept_purity_target(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, embeddings: EmbeddingsResource
) -> CheckResult:
    embedder = embeddings.cached_embedder(storage.memory_home())
    return concept_checks.concept_purity(corpus_store(context, storage), embedder, PURITY_TARGET)
