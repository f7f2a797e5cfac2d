"""What every stage shares about concepts (docs/architecture.md §3, §4.4, §4.10): the memory loop creates and refines
them, the gardener merges, splits and archives them, the topic stages link and rank them.

- `ConceptHypothesis` (`memory_core.ontology.concepts`) is the one concept object; `store`: reading and
  writing `canonical_concepts` and `concept_evidence` as it; `LIVE_STATES`: the states a concept is live in;
- `patches`: how a change is stated and applied (live and on replay); `action_log`: the append-only log of
  every change and its replay; `rows_behind`: the rows a memory-loop run has not written yet, and their
  rebuild from the log that every writer of concepts calls first;
- `policy`: how evidence moves confidence and state; `names`: how names are compared and aliases collected;
- `metrics`: the quality figures of the concept memory (coverage, purity, grounding, compression).
"""

from memory_core.concepts.names import merge_aliases, normalise_name
from memory_core.concepts.policy import ConceptPolicy, noisy_or, state_for
from memory_core.ontology.concepts import LIVE_STATES, ConceptHypothesis, EvidenceSpan

__all__ = [
    "LIVE_STATES",
    "ConceptHypothesis",
    "ConceptPolicy",
    "EvidenceSpan",
    "merge_aliases",
    "noisy_or",
    "normalise_name",
    "state_for",
]
