"""The Agentic Memory Gardener (DESIGN §4.10): maintenance of the concept graph as its own loop.

- Phase 0, triage (`triage.run_triage`): concepts + topics + sampled evidence + frequency statistics →
  a LifecycleProposals manifest (merge / split / macro_concept / noise candidates, each scored, cited and
  explained) written to `lifecycle_proposals` as pending_review. Proposals, never truth: triage does not
  mutate concepts. Offline scoring (`scoring`, `noise`), an optional batched LLM review (`llm_triage`).
- Phase 1, surgical refactoring (`apply.apply_proposals`): per proposal a small neighbourhood
  (`neighbourhood`), a chooser (rule-based `choosers`, or the LLM agent `llm_chooser`), a finite action
  space validated by `actions` (uncited actions refused), audited writes (`refactor`, `state`), a dry-run
  that writes only a report (`report`), and exact rollback (`audit`).
- `metrics`: anchored rate, purity, traceability of merges/splits.
"""

from memory_core.gardener.apply import Phase1Result, apply_proposals
from memory_core.gardener.audit import list_actions, rollback_action, rollback_run
from memory_core.gardener.choosers import ChooserRules, RuleBasedChooser
from memory_core.gardener.errors import GardenerError, RefusedActionError, RollbackConflictError
from memory_core.gardener.scoring import TriageConfig
from memory_core.gardener.state import content_hash
from memory_core.gardener.triage import TriageReport, run_triage

__all__ = [
    "ChooserRules",
    "GardenerError",
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
