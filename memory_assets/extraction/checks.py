"""Contracts of the extraction stage (memory_core.extraction.checks) as asset checks."""

import dagster as dg

from memory_assets.common import corpus_check, corpus_store
from memory_core.extraction import checks as contracts
from memory_core.extraction.checks import REACTION_SCHEMA_VALIDITY_MIN, VOCABULARY_COVERAGE_MIN
from memory_core.reports import CheckResult
from memory_resources.storage import MemoryStorage


@corpus_check(
    "mentions",
    blocking=True,
    description="100% of mention spans verbatim in their message, inside their segment",
)
def mention_spans_verbatim(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.mention_spans_verbatim(corpus_store(context, storage))


@corpus_check(
    "mentions",
    severity=dg.AssetCheckSeverity.WARN,
    description="every current segment has been answered by the teacher (none pending after an LLM outage)",
)
def every_segment_extracted(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.every_segment_extracted(corpus_store(context, storage))


@corpus_check("user_reactions", description=f"reaction schema validity ≥ {REACTION_SCHEMA_VALIDITY_MIN:.0%}")
def reaction_schema_validity(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.reaction_schema_validity(corpus_store(context, storage))


@corpus_check(
    "user_reactions",
    description=f"controlled-vocabulary coverage ≥ {VOCABULARY_COVERAGE_MIN:.0%} (share not Other)",
)
def reaction_vocabulary_coverage(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> CheckResult:
    return contracts.reaction_vocabulary_coverage(corpus_store(context, storage))


@corpus_check(
    "user_reactions", blocking=True, description="0% NULL timestamps; every cue verbatim in its message"
)
def reaction_timestamps_and_evidence(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> CheckResult:
    return contracts.reaction_timestamps_and_evidence(corpus_store(context, storage))
