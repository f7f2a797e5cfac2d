"""The Agentic Memory Gardener (docs/architecture.md §4.10): maintenance of the concept graph as its own loop, in two
phases that share only what both need.

- `triage/` (Phase 0, `run_triage`): LifecycleProposals (merge / split / macro_concept / noise candidates,
  each scored, cited and explained) written to `lifecycle_proposals` as pending_review; never mutates
  concepts.
- `refactor/` (Phase 1, `apply_proposals`): per proposal a small neighbourhood, a chooser (rules or an
  LLM agent), a finite action space with uncited actions refused, audited writes, a dry run that writes
  only a report, exact rollback.
- shared: `proposals` (the lifecycle_proposals table both phases use), `common` (mentions, people, type
  compatibility), `metrics` (anchored rate, purity, traceability), `checks` (the stage's contracts),
  `errors`. Concepts themselves are read and written through `memory_core.concepts`.
"""

from memory_core.concepts.store import content_hash
from memory_core.gardener.errors import GardenerError, RefusedActionError, RollbackConflictError
from memory_core.gardener.proposals import CATEGORIES
from memory_core.gardener.refactor import (
    REPORT_DIR,
    ChooserRules,
    LLMChooser,
    Phase1Result,
    RuleBasedChooser,
    apply_proposals,
    list_actions,
    rollback_action,
    rollback_run,
)
from memory_core.gardener.triage import MANIFEST_FILE, TriageConfig, TriageReport, run_triage

__all__ = [
    "CATEGORIES",
    "MANIFEST_FILE",
    "REPORT_DIR",
    "ChooserRules",
    "GardenerError",
    "LLMChooser",
    "Phase1Result",
    "RefusedActionError",
    "RollbackConflictError",
    "RuleBasedChooser",
    "TriageConfig",
    "TriageReport",
    "apply_proposals",
    "content_hash",
    "list_actions",
    "rollback_action",
    "rollback_run",
    "run_triage",
]
