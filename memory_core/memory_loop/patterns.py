"""Broader concepts the memory loop lets facts support: instances of goals and habits, episodes of patterns.

Both read the loop's working memory (`SubjectFacts`: the live fact concepts of each subject with their
salient stems, conversations and time) and the retriever's concept vectors:

- `instance_target`: a fact that shares its subject and a content stem with a live goal or behavioral
  pattern, and is close to it (cosine ≥ `RouterRules.instance_similarity`), supports it as evidence
  ("Caroline applied to adoption agencies" → "Caroline wants to adopt a child").
- `judge_pattern`: a reflective candidate (a behavioral pattern or tension the extractor read into one
  phrasing) stands only on episodes — fact concepts of the same subject sharing a content stem, close
  enough (`pattern_support_similarity`) — from several conversations, and not when a later statement of
  the subject on the same content says it stopped (DESIGN §8: several supporting episodes, cross-episode
  evidence, no contradiction with the temporal course). A single lucky phrasing stays a residual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.retriever import ConceptIndex
from memory_core.memory_loop.router import RouterRules
from memory_core.memory_loop.support import PatternJudgement, ceases, fact_subject, salient_stems
from memory_core.ontology.concepts import FACT_TYPES, ConceptHypothesis

MAX_EPISODES = 6  # episodes attached to a pattern when it is created


@dataclass
class _Fact:
    type: str
    stems: frozenset[str]
    ceases: bool


@dataclass
class SubjectFacts:
    """The live fact concepts of each subject, with what the loop matches instances and episodes on."""

    by_subject: dict[str, dict[str, _Fact]] = field(default_factory=dict)

    def add(self, concept: ConceptHypothesis) -> None:
        if concept.type not in FACT_TYPES:
            return
        facts = self.by_subject.setdefault(fact_subject(concept.title), {})
        text = f"{concept.title} {concept.description}"
        facts[concept.concept_id] = _Fact(concept.type, salient_stems(concept.title), ceases(text))

    def related(self, subject: str, stems: frozenset[str], exclude: str = "") -> list[str]:
        """Fact concepts of `subject` sharing a content stem with `stems`."""
        return [
            cid for cid, f in self.by_subject.get(subject, {}).items() if cid != exclude and f.stems & stems
        ]

    def fact(self, subject: str, cid: str) -> _Fact:
        return self.by_subject[subject][cid]


def _cosines(index: ConceptIndex, vector: np.ndarray, ids: list[str]) -> dict[str, float]:
    if not ids:
        return {}
    rows = [index.row_of(c) for c in ids]
    return dict(zip(ids, (index.matrix[rows] @ np.asarray(vector, dtype=np.float32)).tolist(), strict=True))


def instance_target(
    facts: SubjectFacts,
    index: ConceptIndex,
    cand: Candidate,
    vector: np.ndarray,
    own: str,
    rules: RouterRules,
) -> tuple[str, float] | None:
    """(broader concept, cosine) the fact `cand` (now evidence of `own`) supports as an instance, or None."""
    subject, stems = fact_subject(cand.canonical_title), salient_stems(cand.canonical_title)
    ids = [
        c
        for c in facts.related(subject, stems, exclude=own)
        if facts.fact(subject, c).type in rules.instance_types and c in index
    ]
    sims = _cosines(index, vector, ids)
    best = max(sims.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    return best if best is not None and best[1] >= rules.instance_similarity else None


def judge_pattern(
    facts: SubjectFacts,
    index: ConceptIndex,
    concepts: dict[str, ConceptHypothesis],
    cand: Candidate,
    vector: np.ndarray,
    rules: RouterRules,
) -> PatternJudgement:
    """Whether a reflective candidate stands on episodes from several conversations, and is not
    contradicted by a statement of the same subject on the same content, made after its last episode,
    that it stopped ("Melanie quit pottery" after "Melanie does pottery every week")."""
    subject, title = fact_subject(cand.canonical_title), cand.canonical_title
    judgement = PatternJudgement(conversations={cand.conversation_id})
    related = [c for c in facts.related(subject, salient_stems(title)) if c in index]
    sims = _cosines(index, vector, related)
    close = sorted(
        (c for c in related if sims[c] >= rules.pattern_support_similarity), key=lambda c: (-sims[c], c)
    )
    stopped = [c for c in close if facts.fact(subject, c).ceases]
    for cid in (c for c in close if c not in stopped):
        if len(judgement.episodes) < MAX_EPISODES:
            judgement.episodes.append(cid)
            judgement.conversations |= index.conversations_of(cid)
    latest = max(
        [_naive(cand.message_created_at), *(_naive(concepts[c].last_seen) for c in judgement.episodes)]
    )
    if not ceases(f"{title} {cand.description}"):  # a habit told as past ("used to ...") is not contradicted
        later = [c for c in stopped if _naive(concepts[c].first_seen) > latest]
        judgement.contradicted_by = later[0] if later else ""
    return judgement


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None)
