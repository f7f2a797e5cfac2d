"""Contracts of the consolidation stage as partitioned asset checks with explicit severity (the logic is in
core: `memory_core.concepts.checks`, `memory_core.memory_loop.checks`)."""

import dagster as dg

from memory_assets.common import corpus_check, corpus_store
from memory_assets.consolidation.assets import canonical_concepts as concepts_asset
from memory_core.concepts import checks as concept_checks
from memory_core.concepts.checks import PURITY_THRESHOLD
from memory_core.memory_loop import checks as loop_checks
from memory_core.reports import CheckResult
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.storage import MemoryStorage


@corpus_check(
    concepts_asset,
    blocking=True,
    description="evidence grounding 100%: every evidence span of every live concept equals its message text",
)
def evidence_grounding(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return concept_checks.evidence_grounding(corpus_store(context, storage))


@corpus_check(
    concepts_asset,
    # a quality target: it flags drift, it does not stop downstream stages
    severity=dg.AssetCheckSeverity.WARN,
    description=f"concept purity > {PURITY_THRESHOLD}: mean pairwise cosine of the candidates each concept absorbed",
)
def concept_purity(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, embeddings: EmbeddingsResource
) -> CheckResult:
    embedder = embeddings.cached_embedder(storage.memory_home())
    return concept_checks.concept_purity(corpus_store(context, storage), embedder)


@corpus_check(
    concepts_asset,
    blocking=True,
    description="every mention is linked to a live concept or recorded as a residual; no link dangles",
)
def mentions_accounted(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return loop_checks.mentions_accounted(corpus_store(context, storage))


@corpus_check(
    concepts_asset,
    description="replaying the action_log over an empty store reproduces canonical_concepts and "
    "concept_evidence exactly (memory-loop and gardener actions alike)",
)
def action_log_replays(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return concept_checks.action_log_replays(corpus_store(context, storage))
