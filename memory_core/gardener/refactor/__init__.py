"""Phase 1, surgical refactoring (docs/architecture.md §4.10): pending proposals → a chooser's actions → validated,
audited, reversible changes to the concepts (a dry run writes only a report).

- `neighbourhood`: the small subgraph a decision is made on; `choosers`: the rule-based chooser,
  `llm_chooser`: the LLM agent; `actions`: the finite action space and its validation;
- `state`: the run's workspace, snapshots and their writes; `run`: the run over proposals; `apply`: a run
  with quality before/after and its report (`report`); `audit`: listing and exact rollback.
"""

from memory_core.gardener.refactor.apply import Phase1Result, apply_proposals
from memory_core.gardener.refactor.audit import list_actions, rollback_action, rollback_run
from memory_core.gardener.refactor.choosers import Choice, Chooser, ChooserRules, RuleBasedChooser
from memory_core.gardener.refactor.llm_chooser import LLMChooser
from memory_core.gardener.refactor.report import REPORT_DIR
from memory_core.gardener.refactor.run import RefactorReport, apply_action, run_refactor

__all__ = [
    "REPORT_DIR",
    "Choice",
    "Chooser",
    "ChooserRules",
    "LLMChooser",
    "Phase1Result",
    "RefactorReport",
    "RuleBasedChooser",
    "apply_action",
    "apply_proposals",
    "list_actions",
    "rollback_action",
    "rollback_run",
    "run_refactor",
]
