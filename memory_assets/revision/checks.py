"""Contracts of the revision stages, evaluated as asset checks in the step of the asset they check (the logic
is in core: `memory_core.revision.checks`)."""

import dagster as dg

from memory_assets.common import Contract
from memory_core.revision import checks as contracts

CLAIMS = (
    Contract(
        "claims_grounded",
        "every active or disputed claim reads its message's text at its span, in a current segment",
        contracts.claims_grounded,
        blocking=True,
    ),
)

FACT_STATES = (
    Contract(
        "no_overlapping_valid_intervals",
        "per (subject, slot) no two undisputed believed states overlap in valid time",
        contracts.no_overlapping_valid_intervals,
        blocking=True,
    ),
    Contract(
        "closed_states_cite_closer",
        "every closed state cites the claim and message that closed it (and what replaced it)",
        contracts.closed_states_cite_closer,
    ),
)

REPAIRS = (
    Contract(
        "confidence_within_evidence",
        "no live concept's confidence is above what its surviving active evidence supports",
        contracts.confidence_within_evidence,
    ),
    Contract(
        "repair_queue_drained",
        "the repair queue is drained, or what is left is reported (escalated rows say why)",
        contracts.repair_queue_drained,
        # a queue longer than one run's budget is work left, not a broken memory: reported, not blocking
        severity=dg.AssetCheckSeverity.WARN,
    ),
)
