"""Router of the memory loop: create / attach / refine / reject, by explicit configurable rules.

For one candidate (a mention) and its retrieved concepts:

1. **reject** (to `residuals`, with a reason code) when the candidate fails the quality gate: its span no
   longer verifies against the message text, its segment was superseded, its type is outside the
   ontology, its confidence is below `min_confidence`, or its title is empty / generic / a sentence.
2. Among retrieved concepts of a **compatible type** (the same type, or a pair listed in
   `compatible_types`), take the best by fused score, skipping concepts already evidenced in the
   candidate's own segment under a name sharing no word with it: the extractor told those apart in the
   very same context, so they are neighbours, not the same concept, however close their descriptions. It is a match when the fused score reaches
   `attach_score` with cosine ≥ `min_attach_similarity`, or when a title/alias is shared exactly with
   cosine ≥ `alias_attach_similarity`.
3. A match is **refine** when the concept is still weak and the candidate is more confident than any of
   its evidence (by `refine_margin`) with a different description: the description is rewritten,
   revision_count + 1, the prior state kept in the log. Otherwise **attach**.
4. In the ambiguous band (`ambiguous_score` ≤ fused < match) an optional adjudicator decides; without one
   (the default) the candidate **creates** a concept: a false split is repairable by the gardener's merge,
   a false attach pollutes a concept's evidence.
5. Otherwise **create**.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_core.memory_loop.adjudication import Adjudicator, ConceptOption
from memory_core.memory_loop.candidates import Candidate, normalise_name
from memory_core.memory_loop.retriever import RetrievalHit
from memory_core.ontology.concepts import CONCEPT_TYPES

GENERIC_TITLES = (
    "thing things stuff something anything everything nothing it this that these those them they he she "
    "i me you we us one ones someone somebody people person time times day today yesterday tomorrow way "
    "lot lots kind sort bit idea ideas question answer yes no ok okay hi hello hey thanks thank"
).split()


@dataclass(frozen=True)
class RouterRules:
    # tuned on all-MiniLM-L6-v2 keys: paraphrased names of one thing score cosine 0.86-0.91 ("pottery" /
    # "pottery class"), distinct siblings 0.61-0.65 ("Max: Dana's dog" / "Luna: Dana's cat"); one name
    # shared by one thing 0.64, by two (a dog and a coworker both called Max) 0.72 - only an adjudicator
    # tells those apart
    attach_score: float = 0.70
    min_attach_similarity: float = 0.80
    alias_attach_similarity: float = 0.55
    ambiguous_score: float = 0.60
    min_confidence: float = 0.25
    min_title_chars: int = 2
    max_title_words: int = 10
    refine_margin: float = 0.05
    # unordered pairs of types that may denote the same thing (an extractor's typing is not stable)
    compatible_types: tuple[str, ...] = (
        "project|goal",
        "project|entity",
        "belief|behavioral_pattern",
        "tension|belief",
    )
    generic_titles: tuple[str, ...] = field(default=tuple(GENERIC_TITLES))

    def compatible(self, a: str, b: str) -> bool:
        return a == b or f"{a}|{b}" in self.compatible_types or f"{b}|{a}" in self.compatible_types

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "generic_titles"}


@dataclass
class Decision:
    action: str  # create | attach | refine | reject
    concept_id: str | None  # the target of attach/refine
    reason_code: str
    rationale: str
    scores: dict
    duplicate_span: bool = False


@dataclass
class ConceptView:
    """What the router needs to know of a concept."""

    concept_id: str
    title: str
    type: str
    description: str
    aliases: list[str]
    state: str
    best_evidence_confidence: float
    holds_span: bool  # the concept already has the candidate's exact span as evidence


class Router:
    def __init__(self, rules: RouterRules | None = None, adjudicator: Adjudicator | None = None):
        self.rules = rules or RouterRules()
        self.adjudicator = adjudicator
        self._generic = frozenset(self.rules.generic_titles)

    def screen(self, cand: Candidate, message_text: str | None, segment_live: bool) -> Decision | None:
        """The reject decision when the candidate fails the quality gate (checked before retrieval), else None."""
        problem = self._quality_problem(cand, message_text, segment_live)
        return Decision("reject", None, problem[0], problem[1], {}) if problem else None

    def _quality_problem(
        self, cand: Candidate, message_text: str | None, segment_live: bool
    ) -> tuple[str, str] | None:
        r = self.rules
        if message_text is None:
            return "message_missing", f"message {cand.message_id} is not in the source store"
        if message_text[cand.span_start : cand.span_end] != cand.surface or cand.span_end <= cand.span_start:
            return (
                "span_unverified",
                f"span [{cand.span_start}:{cand.span_end}] no longer equals the mention's surface text",
            )
        if not segment_live:
            return (
                "segment_superseded",
                f"segment {cand.segment_id} was superseded by a newer cut of its conversation",
            )
        if cand.type not in CONCEPT_TYPES:
            return "unknown_type", f"type {cand.type!r} is not in the ontology"
        if cand.confidence < r.min_confidence:
            return "low_confidence", f"confidence {cand.confidence:.2f} < {r.min_confidence}"
        title = normalise_name(cand.title)
        if len(title) < r.min_title_chars:
            return "empty_title", f"title {cand.title!r} is too short to name a concept"
        if title in self._generic or all(w in self._generic for w in title.split()):
            return "generic_title", f"title {cand.title!r} is a generic word, not a concept"
        if len(title.split()) > r.max_title_words:
            return (
                "sentence_title",
                f"title has {len(title.split())} words (> {r.max_title_words}): a sentence, not a name",
            )
        return None

    def route(self, cand: Candidate, hits: list[RetrievalHit], concepts: dict[str, ConceptView]) -> Decision:
        r = self.rules
        typed = [h for h in hits if r.compatible(cand.type, concepts[h.concept_id].type)]
        compatible = [h for h in typed if not (h.graph >= 1.0 and h.lexical == 0.0)]
        scores = {
            "best": compatible[0].components() if compatible else None,
            "alternatives": [h.components() for h in hits[:4] if not compatible or h is not compatible[0]],
        }
        if not compatible:
            if typed:
                why = "the only compatible concepts are co-mentioned in the same segment under other names"
                return Decision("create", None, "co_mentioned_distinct", why, scores)
            why = (
                "no existing concepts"
                if not hits
                else f"no retrieved concept has a type compatible with {cand.type}"
            )
            return Decision("create", None, "no_match", why, scores)
        best = compatible[0]
        strong = best.score >= r.attach_score and best.similarity >= r.min_attach_similarity
        alias = best.lexical >= 1.0 and best.similarity >= r.alias_attach_similarity
        if strong or alias:
            rule = (
                f"fused {best.score:.3f} ≥ {r.attach_score} and cosine {best.similarity:.3f} ≥ {r.min_attach_similarity}"
                if strong
                else f"shared title/alias and cosine {best.similarity:.3f} ≥ {r.alias_attach_similarity}"
            )
            return self._match(cand, concepts[best.concept_id], rule, scores)
        if best.score >= r.ambiguous_score:
            if self.adjudicator is not None:
                return self._adjudicate(cand, compatible, concepts, scores)
            return Decision(
                "create",
                None,
                "ambiguous_create",
                f"fused {best.score:.3f} in the ambiguous band [{r.ambiguous_score}, {r.attach_score}) and no "
                "adjudicator: a new concept (a merge later is cheaper than a wrong attach)",
                scores,
            )
        return Decision("create", None, "novel", f"best fused {best.score:.3f} < {r.ambiguous_score}", scores)

    def _match(self, cand: Candidate, target: ConceptView, rule: str, scores: dict) -> Decision:
        r = self.rules
        if target.holds_span:
            return Decision(
                "attach",
                target.concept_id,
                "duplicate_span",
                f"{rule}; span already held as evidence",
                scores,
                True,
            )
        if (
            target.state == "weak"
            and cand.confidence >= target.best_evidence_confidence + r.refine_margin
            and normalise_name(cand.description) != normalise_name(target.description)
        ):
            return Decision(
                "refine",
                target.concept_id,
                "refine_weak",
                f"{rule}; concept is weak and the candidate (confidence {cand.confidence:.2f}) is more confident "
                f"than its evidence ({target.best_evidence_confidence:.2f}): description rewritten",
                scores,
            )
        return Decision("attach", target.concept_id, "match", rule, scores)

    def _adjudicate(
        self, cand: Candidate, compatible: list[RetrievalHit], concepts: dict[str, ConceptView], scores: dict
    ) -> Decision:
        r = self.rules
        offered = [h for h in compatible if h.score >= r.ambiguous_score][:3]
        options = [
            ConceptOption(c.concept_id, c.title, c.type, c.description, tuple(c.aliases), h.components())
            for h in offered
            for c in [concepts[h.concept_id]]
        ]
        name = self.adjudicator.name
        try:
            answer = self.adjudicator.adjudicate(cand, options)
        except Exception as exc:  # an LLM fault must not stop the run: fall back to the rule, say why
            scores["adjudicator"] = {"name": name, "error": type(exc).__name__}
            return Decision(
                "create",
                None,
                "adjudicator_failed",
                f"adjudicator {name} failed ({type(exc).__name__}: {exc}); rule: create",
                scores,
            )
        scores["adjudicator"] = {"name": name, "decision": answer.decision, "confidence": answer.confidence}
        why = f"adjudicator {name}: {answer.rationale}"
        if answer.decision == "reject":
            return Decision("reject", None, "adjudicator_reject", why, scores)
        if answer.decision == "attach":
            if answer.concept_id not in {o.concept_id for o in options}:
                return Decision(
                    "create",
                    None,
                    "adjudicator_invalid",
                    f"{why} (chose {answer.concept_id!r}, not an offered concept; rule: create)",
                    scores,
                )
            return self._match(cand, concepts[answer.concept_id], why, scores)
        return Decision("create", None, "adjudicator_create", why, scores)
