"""Contracts of the extraction stage (memory_core.extraction.checks), evaluated as asset checks in the
extraction step."""

import dagster as dg

from memory_assets.common import Contract
from memory_core.extraction import checks as contracts
from memory_core.extraction.checks import REACTION_SCHEMA_VALIDITY_MIN, VOCABULARY_COVERAGE_MIN

MENTIONS = (
    Contract(
        "mention_spans_verbatim",
        "100% of mention spans verbatim in their message, inside their segment",
        contracts.mention_spans_verbatim,
        blocking=True,
    ),
    Contract(
        "every_segment_extracted",
        "every current segment has been answered by the teacher (none pending after an LLM outage)",
        contracts.every_segment_extracted,
        severity=dg.AssetCheckSeverity.WARN,
    ),
)

USER_REACTIONS = (
    Contract(
        "reaction_schema_validity",
        f"reaction schema validity ≥ {REACTION_SCHEMA_VALIDITY_MIN:.0%}",
        contracts.reaction_schema_validity,
    ),
    Contract(
        "reaction_vocabulary_coverage",
        f"controlled-vocabulary coverage ≥ {VOCABULARY_COVERAGE_MIN:.0%} (share not Other)",
        contracts.reaction_vocabulary_coverage,
    ),
    Contract(
        "reaction_timestamps_and_evidence",
        "0% NULL timestamps; every cue verbatim in its message",
        contracts.reaction_timestamps_and_evidence,
        blocking=True,
    ),
)
