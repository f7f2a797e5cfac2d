"""The base ontology (docs/architecture.md §3, §8): typed objects and the relations allowed between them."""

from memory_core.ontology.concepts import (
    CONCEPT_STATES,
    CONCEPT_TYPES,
    RELATION_TYPES,
    TRUST_STATES,
    ConceptHypothesis,
    ConceptRelation,
    EvidenceSpan,
)
from memory_core.ontology.extraction import (
    CandidateRelation,
    CandidateSpan,
    ConceptCandidate,
    ReactionCandidate,
    SegmentExtraction,
)
from memory_core.ontology.lifecycle import LifecycleProposal, LifecycleProposals
from memory_core.ontology.reactions import REACTION_STATES, UserReaction
from memory_core.ontology.strict import (
    StrictBase,
    StrictSchemaError,
    assert_strict_schema,
    schema_problems,
    strict_json_schema,
)

__all__ = [
    "CONCEPT_STATES",
    "CONCEPT_TYPES",
    "REACTION_STATES",
    "RELATION_TYPES",
    "TRUST_STATES",
    "CandidateRelation",
    "CandidateSpan",
    "ConceptCandidate",
    "ConceptHypothesis",
    "ConceptRelation",
    "EvidenceSpan",
    "LifecycleProposal",
    "LifecycleProposals",
    "ReactionCandidate",
    "SegmentExtraction",
    "StrictBase",
    "StrictSchemaError",
    "UserReaction",
    "assert_strict_schema",
    "schema_problems",
    "strict_json_schema",
]
