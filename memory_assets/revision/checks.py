"""Contracts of the revision stages as partitioned asset checks with explicit severity (the logic is in
core: `memory_core.revision.checks`)."""

import dagster as dg

from memory_assets.common import corpus_check, corpus_store
from memory_assets.revision.assets import claims as claims_asset
from memory_assets.revision.assets import fact_states as fact_states_asset
from memory_assets.revision.assets import repairs as repairs_asset
from memory_core.reports import CheckResult
from memory_core.revision import checks as contracts
from memory_resources.storage import MemoryStorage


@corpus_check(
    claims_asset,
    blocking=True,
    description="every active or disputed claim reads its message's text at its span, in a current segment",
)
def claims_grounded(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.claims_grounded(corpus_store(context, storage))


@corpus_check(
    fact_states_asset,
    blocking=True,
    description="per (subject, slot) no two undisputed believed states overlap in valid time",
)
def no_overlapping_valid_intervals(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> CheckResult:
    return contracts.no_overlapping_valid_intervals(corpus_store(context, storage))


@corpus_check(
    fact_states_asset,
    description="every closed state cites the claim and message that closed it (and what replaced it)",
)
def closed_states_cite_closer(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.closed_states_cite_closer(corpus_store(context, storage))


@corpus_check(
    repairs_asset,
    description="no live concept's confidence is above what its surviving active evidence supports",
)
def confidence_within_evidence(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.confidence_within_evidence(corpus_store(context, storage))


@corpus_check(
    repairs_asset,
    # a queue longer than one run's budget is work left, not a broken memory: reported, not blocking
    severity=dg.AssetCheckSeverity.WARN,
    description="the repair queue is drained, or what is left is reported (escalated rows say why)",
)
def repair_queue_drained(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.repair_queue_drained(corpus_store(context, storage))
