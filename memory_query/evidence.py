"""What the read side returns: ranked evidence items, the XML context an agent reads, and the citation rule.

Every item is citable: a message as `[Source:<message uuid>]`, a concept as `[Concept:<concept id>]`. An
answer sentence without a citation that resolves to returned (or stored) evidence is invalid.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from xml.sax.saxutils import escape, quoteattr

EXCERPT_CHARS = 600
FACTS_SHOWN = 12  # <fact> elements in the XML context


@dataclass
class EvidenceItem:
    """A source message found for the question, with where it sits and why it was found."""

    message_id: str
    conversation_id: str
    conversation_ref: str  # the conversation's id in its input (LongMemEval session id, LoCoMo <sample>:S<n>)
    source_ref: str  # the message's id in its input (dia_id, <session>_<turn>, node id, JSONL id)
    role: str
    author: str
    created_at: datetime
    time_derived: bool
    text: str  # an excerpt (the span when one was matched, else the start of the message)
    span_start: int  # char offsets of `text` in the message
    span_end: int
    score: float
    paths: list[str]  # the fused paths that found it (registry names, `memory_query.paths.PATH_NAMES`)
    channel_scores: dict[str, float] = field(default_factory=dict)  # path name → its normalised score
    concept_ids: list[str] = field(default_factory=list)  # concepts this message is evidence for
    #: the facts this message states, as of the question's times (`memory_query.facts.FactNote.as_dict`),
    #: the one the question is about first
    facts: list[dict] = field(default_factory=list)
    on_active_branch: bool = True  # False: an abandoned ChatGPT branch (kept and citable, never current)

    @property
    def citation(self) -> str:
        return f"[Source:{self.message_id}]"

    @property
    def fact(self) -> dict | None:
        """The fact the question is about (the first of `facts`), or None."""
        return self.facts[0] if self.facts else None

    def as_dict(self) -> dict:
        d = asdict(self)
        d["created_at"] = self.created_at.isoformat()
        d["citation"] = self.citation
        fact = self.fact or {}
        d["fact_status"] = fact.get("status")
        d["valid_from"] = fact.get("valid_from")
        d["valid_until"] = fact.get("valid_until")
        d["superseded_by"] = (fact.get("superseded_by") or {}).get("cite")
        return d


@dataclass
class ConceptHit:
    concept_id: str
    title: str
    type: str
    description: str
    confidence: float
    trust: str
    first_seen: datetime
    last_seen: datetime
    score: float
    evidence_message_ids: list[str]
    paths: list[str]
    facts: list[dict] = field(default_factory=list)  # the facts its claims state (as EvidenceItem.facts)

    @property
    def citation(self) -> str:
        return f"[Concept:{self.concept_id}]"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["first_seen"], d["last_seen"] = self.first_seen.isoformat(), self.last_seen.isoformat()
        d["citation"] = self.citation
        return d


@dataclass
class TopicHit:
    topic_id: str
    label: str
    score: float
    size: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class ReactionHit:
    reaction_id: str
    message_id: str
    state: str
    intensity: float
    valence: str
    epistemic_status: str
    evidence_text: str
    occurred_at: datetime
    topic_id: str | None

    def as_dict(self) -> dict:
        d = asdict(self)
        d["occurred_at"] = self.occurred_at.isoformat()
        return d


@dataclass
class MemoryAnswer:
    """The result of `query_memory`: ranked evidence and the XML context built from it."""

    question: str
    corpus: str
    as_of: datetime | None
    items: list[EvidenceItem]
    concepts: list[ConceptHit]
    topics: list[TopicHit]
    reflective: list[ReactionHit]
    context: str  # the XML blocks
    #: path name → whether the memory that path reads was built (lexical/session: the index files, else BM25
    #: built from the source; graph: a loaded graph store, else the same walks over the tables)
    paths_available: dict[str, bool]
    timings_ms: dict[str, float]

    @property
    def citations(self) -> set[str]:
        return {i.citation for i in self.items} | {c.citation for c in self.concepts}

    def as_dict(self) -> dict:
        return {
            "question": self.question,
            "corpus": self.corpus,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "items": [i.as_dict() for i in self.items],
            "concepts": [c.as_dict() for c in self.concepts],
            "topics": [t.as_dict() for t in self.topics],
            "reflective": [r.as_dict() for r in self.reflective],
            "context": self.context,
            "paths_available": self.paths_available,
            "timings_ms": self.timings_ms,
        }


# ------------------------------------------------------------------------------------------ XML context
def _attrs(**values: object) -> str:
    return " ".join(f"{k}={quoteattr(str(v))}" for k, v in values.items() if v is not None and v != "")


def render_context(answer: MemoryAnswer, include_reflective: bool) -> str:
    """The four evidence blocks of docs/architecture.md §7, each item with ids, timestamps and character spans."""
    out = [
        f"<memory {_attrs(corpus=answer.corpus, as_of=answer.as_of.isoformat() if answer.as_of else None)}>"
    ]
    out.append("<direct_evidence>")
    for item in answer.items:
        out.append(
            f"  <evidence {_attrs(cite=item.citation, author=item.author, role=item.role, time=item.created_at.isoformat(), span=f'{item.span_start}-{item.span_end}', score=round(item.score, 4), paths=','.join(item.paths), **_fact_attrs(item))}>"
            f"{escape(item.text)}</evidence>"
        )
    out.append("</direct_evidence>")
    out.append("<associative_evidence>")
    for fact, item in _facts_of(answer.items):
        by = fact.get("superseded_by") or {}
        out.append(
            f"  <fact {_attrs(subject=fact['subject'], slot=fact['attribute'], value=fact['value'], status=fact['status'], valid_from=fact['valid_from'], valid_until=fact['valid_until'], superseded_by=by.get('cite'), replaced_by_value=by.get('value'), evidence=item.citation)}/>"
        )
    for topic in answer.topics:
        out.append(
            f"  <topic {_attrs(id=topic.topic_id, label=topic.label, score=round(topic.score, 4), size=topic.size)}/>"
        )
    for c in answer.concepts:
        evidence = " ".join(f"[Source:{m}]" for m in c.evidence_message_ids)
        fact = c.facts[0] if c.facts else {}
        out.append(
            f"  <concept {_attrs(cite=c.citation, title=c.title, type=c.type, confidence=round(c.confidence, 3), trust=c.trust, first_seen=c.first_seen.isoformat(), last_seen=c.last_seen.isoformat(), fact_status=fact.get('status'), valid_until=fact.get('valid_until'), evidence=evidence)}>"
            f"{escape(c.description)}</concept>"
        )
    out.append("</associative_evidence>")
    if include_reflective:
        out.append("<reflective_hypotheses>")
        for r in answer.reflective:
            out.append(
                f"  <reaction {_attrs(state=r.state, intensity=round(r.intensity, 2), valence=r.valence, status=r.epistemic_status, time=r.occurred_at.isoformat(), source=f'[Source:{r.message_id}]', topic=r.topic_id)}>"
                f"{escape(r.evidence_text)}</reaction>"
            )
        out.append("</reflective_hypotheses>")
    out.append("<source_provenance>")
    for item in answer.items:
        out.append(
            f"  <source {_attrs(message_id=item.message_id, conversation_id=item.conversation_id, conversation_ref=item.conversation_ref, source_ref=item.source_ref, created_at=item.created_at.isoformat(), time_derived=str(item.time_derived).lower(), chars=f'{item.span_start}-{item.span_end}')}/>"
        )
    out.append("</source_provenance>")
    out.append("</memory>")
    return "\n".join(out)


def _fact_attrs(item: EvidenceItem) -> dict:
    """The evidence element's attributes for the fact the question is about, and an abandoned branch."""
    out: dict[str, object] = {}
    fact = item.fact
    if fact is not None:
        out["fact"] = f"{fact['subject']} {fact['attribute']}: {fact['value']}"
        out["status"] = fact["status"]
        out["valid_from"] = fact["valid_from"]
        out["valid_until"] = fact["valid_until"]
        out["superseded_by"] = (fact.get("superseded_by") or {}).get("cite")
    if not item.on_active_branch:
        out["branch"] = "abandoned"
    return out


def _facts_of(items: list[EvidenceItem]) -> list[tuple[dict, EvidenceItem]]:
    """The facts the items state, once each (by state, else claim): those the question is about first, in
    item order, at most `FACTS_SHOWN`."""
    seen: set[str] = set()
    out = []
    for asked in (True, False):
        for item in items:
            for fact in item.facts:
                key = fact.get("state_key") or fact["claim_id"]
                if bool(fact.get("asked")) == asked and key not in seen:
                    seen.add(key)
                    out.append((fact, item))
    return out[:FACTS_SHOWN]


# ------------------------------------------------------------------------------------------ citations
CITATION = re.compile(r"\[(Concept|Source):([A-Za-z0-9_\-:.]+)\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


@dataclass
class CitationReport:
    valid: bool
    sentences: int
    uncited: list[str]  # sentences with no citation at all
    unresolved: list[str]  # citations that name nothing known

    def as_dict(self) -> dict:
        return asdict(self)


def answer_sentences(answer_text: str) -> list[str]:
    """The sentences of an answer as the citation rule reads them."""
    return [s.strip() for s in _SENTENCE.split(answer_text.strip()) if s.strip()]


def check_citations(answer_text: str, known: set[str]) -> CitationReport:
    """Every sentence must carry at least one `[Concept:ID]` / `[Source:UUID]` citation, and every citation
    must be in `known` (the citations of the evidence the answer was built from)."""
    sentences = answer_sentences(answer_text)
    uncited: list[str] = []
    unresolved: list[str] = []
    for sentence in sentences:
        found = [f"[{kind}:{ident}]" for kind, ident in CITATION.findall(sentence)]
        if not found:
            uncited.append(sentence)
        unresolved += [c for c in found if c not in known]
    return CitationReport(
        valid=bool(sentences) and not uncited and not unresolved,
        sentences=len(sentences),
        uncited=uncited,
        unresolved=sorted(set(unresolved)),
    )
