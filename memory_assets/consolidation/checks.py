"""Contracts of the consolidation stage, evaluated as asset checks in its step (the logic is in core:
`memory_core.concepts.checks`, `memory_core.memory_loop.checks`)."""

import dagster as dg

from memory_assets.common import Contract
from memory_core.concepts import checks as concept_checks
from memory_core.concepts.checks import PURITY_THRESHOLD
from memory_core.memory_loop import checks as loop_checks

CANONICAL_CONCEPTS = (
    Contract(
        "evidence_grounding",
        "evidence grounding 100%: every evidence span of every live concept equals its message text",
        concept_checks.evidence_grounding,
        blocking=True,
    ),
    Contract(
        "concept_purity",
        f"concept purity > {PURITY_THRESHOLD}: mean pairwise cosine of the candidates each concept absorbed",
        concept_checks.concept_purity,
        # a quality target: it flags drift, it does not stop downstream stages
        severity=dg.AssetCheckSeverity.WARN,
        inputs=("store", "embedder"),
    ),
    Contract(
        "mentions_accounted",
        "every mention is linked to a live concept or recorded as a residual; no link dangles",
        loop_checks.mentions_accounted,
        blocking=True,
    ),
    Contract(
        "action_log_replays",
        "replaying the action_log over an empty store reproduces canonical_concepts and concept_evidence "
        "exactly (memory-loop and gardener actions alike)",
        concept_checks.action_log_replays,
    ),
)
