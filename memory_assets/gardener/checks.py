"""Contracts and quality targets of the gardener, evaluated as asset checks in the step of the asset they
check, with explicit severity (the logic is in core: `memory_core.gardener.checks`,
`memory_core.concepts.checks`)."""

import dagster as dg

from memory_assets.common import Contract
from memory_core.concepts import checks as concept_checks
from memory_core.gardener import checks
from memory_core.gardener.checks import ANCHORED_TARGET

PURITY_TARGET = concept_checks.PURITY_THRESHOLD
# quality targets: they flag, they do not stop anything
WARN = dg.AssetCheckSeverity.WARN

GARDENER_TRIAGE = (
    Contract(
        "triage_left_concepts_unchanged",
        "triage never mutates concepts: canonical_concepts + concept_evidence hash equal before/after",
        checks.triage_left_concepts_unchanged,
        inputs=("figures",),  # the triage run's own report
    ),
    Contract(
        "proposals_cite_sources",
        "every pending proposal has a score in [0, 1], a rationale, existing concepts and cites at least one "
        "source message that exists",
        checks.proposals_cite_sources,
    ),
)

GARDENER_ACTIONS = (
    Contract(
        "merge_split_traceability",
        "100% traceability: every applied merge/split cites source message ids that exist",
        checks.merge_split_traceability,
        blocking=True,
    ),
    Contract(
        "gardened_log_replays",
        "replaying the action_log (memory loop + gardener) reproduces canonical_concepts and concept_evidence "
        "exactly",
        concept_checks.action_log_replays,
    ),
    Contract(
        "no_execution_errors",
        "the latest Phase 1 run had no execution errors (refused actions, failed LLM decisions)",
        checks.no_execution_errors,
        severity=WARN,
        inputs=("figures",),  # the Phase 1 run's own report
    ),
    Contract(
        "anchored_rate_target",
        f"anchored rate > {ANCHORED_TARGET}: share of segments linked to refined concepts (support ≥ 2 or "
        "revised)",
        checks.anchored_rate_target,
        severity=WARN,
    ),
    Contract(
        "concept_purity_target",
        f"concept purity > {PURITY_TARGET} after gardening",
        concept_checks.concept_purity,
        severity=WARN,
        inputs=("store", "embedder"),
    ),
)
