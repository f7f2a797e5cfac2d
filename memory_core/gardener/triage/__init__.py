"""Phase 0, triage (docs/architecture.md §4.10): concepts + topics + sampled evidence + frequency statistics → the
LifecycleProposals manifest, written to `lifecycle_proposals` as pending_review. Proposals, never truth:
triage does not mutate concepts.

- `inventory`: what triage reads (live concepts with an evidence sample, people, topics, word statistics);
- `scoring`: merge / macro_concept / noise candidates, `splits`: split candidates, `noise`: title signals;
- `llm_review`: the optional batched LLM review; `run`: the run, its report and the manifest file.
"""

from memory_core.gardener.triage.run import MANIFEST_FILE, TriageReport, run_triage
from memory_core.gardener.triage.scoring import TriageConfig

__all__ = ["MANIFEST_FILE", "TriageConfig", "TriageReport", "run_triage"]
