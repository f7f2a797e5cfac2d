"""Router of the memory loop: create / attach / refine / reject, by explicit configurable rules.

It follows the title / description contract of `memory_core/ontology/concepts.py`: names (entity, project)
and facts (event, goal, belief, behavioral_pattern, tension) are matched differently, and a candidate
only ever meets concepts of its own family.

1. **reject** (to `residuals`, with a reason code) when the candidate fails the quality gate: its span no
   longer verifies against the message text (`span_unverified`, `message_missing`), its segment was
   superseded (`segment_superseded`), its type is outside the ontology (`unknown_type`), its confidence is
   below `min_confidence` (`low_confidence`), or its canonical title is noise by the contract's rules
   (`memory_core.ontology.titles.title_noise`: `empty_title`, `generic_title`, `sentence_title` for a name,
   `fragment_title`, `boilerplate_title`). A fact is never rejected for being a sentence: its title is cut
   to the canonical short form instead.
2. Among retrieved concepts of a **compatible type** (the same type, or a pair listed in
   `compatible_types`; always within one family) whose evidence comes from conversations sharing a
   participant with the candidate's (else `other_participants`: one corpus may hold several people's
   histories), skip concepts already evidenced in the candidate's own segment under a name sharing no word
   with it: the extractor told those apart in the very same context.
3. **Names**: a match when the fused score reaches `attach_score` with cosine ≥ `min_attach_similarity`, or
   when a title/alias is shared exactly with cosine ≥ `alias_attach_similarity`.
   A shared name is matched by its canonical keys (`names.name_keys`: "Postgres" = "PostgreSQL", "NYC" =
   "New York City"), unless the two descriptions give it different roles ("Max is Dana's dog" / "Max is
   Dana's coworker": then the ambiguous band).
   **Facts**: the same fact when cosine ≥ `fact_attach_similarity`, or a shared title with cosine ≥
   `fact_alias_similarity`, or a restatement in other words (same subject, content-stem overlap ≥
   `fact_restatement_overlap`, cosine ≥ `fact_restatement_similarity`); and, when either side is an event,
   their times are compatible (the dates their
   descriptions name, else the times they were told, ± `event_window_days`): two support-group visits a
   month apart are two events (`event_time_differs`).
4. A match is **refine** when the candidate restates the concept better, else **attach**:
   a name's description keeps the best definition seen and up to three usage contexts
   (`summaries.py`: `refine_definition`, `refine_context`); a weak concept takes the description of a
   candidate more confident than any of its evidence by `refine_margin` (`refine_weak`); a fact without a
   date takes a restatement that dates it (`refine_dated`); a fact's description grows by a restatement
   that says more (`refine_grown`, up to `summaries.MAX_RESTATEMENTS`). The prior state is kept in the log.
5. In the ambiguous band (names: `ambiguous_score` ≤ fused < match; facts: `fact_ambiguous_similarity` ≤
   cosine < match) the adjudicator decides when there is one (the LLM, when one is configured: see
   `adjudication.py`; its attach still goes through the refine/attach rules of 4, an answer naming a
   concept that was not offered or a failed call falls back to create with the reason); without one the
   candidate **creates** a concept: a false split is repairable by the gardener's merge, a false attach
   pollutes a concept.
6. Otherwise **create**.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.concepts.names import normalise_name
from memory_core.lexical import tokenize
from memory_core.llm.base import LLMConfigurationError
from memory_core.memory_loop import summaries
from memory_core.memory_loop.adjudication import Adjudicator, ConceptOption
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.retriever import RetrievalHit
from memory_core.memory_loop.support import fact_subject, salient_stems, stem_overlap
from memory_core.memory_loop.valid_time import compatible as times_compatible
from memory_core.memory_loop.valid_time import described_interval, interval
from memory_core.ontology.concepts import CONCEPT_TYPES, ConceptHypothesis, type_family
from memory_core.ontology.titles import title_noise

REJECT_REASONS = ("message_missing", "span_unverified", "segment_superseded", "unknown_type", "low_confidence",
                  "empty_title", "generic_title", "sentence_title", "fragment_title", "boilerplate_title",
                  "subjectless_title", "dangling_title", "vague_title", "adjudicator_reject",
                  "reflective_unsupported", "reflective_contradicted", "theme_unsupported")  # fmt: skip
REFINE_REASONS = ("refine_definition", "refine_context", "refine_weak", "refine_dated", "refine_grown")


@dataclass(frozen=True)
class RouterRules:
    # names - tuned on all-MiniLM-L6-v2 keys: paraphrased names of one thing score cosine 0.86-0.91
    # ("pottery" / "pottery class"), distinct siblings 0.61-0.65 ("Max: Dana's dog" / "Luna: Dana's cat");
    # one name shared by one thing 0.64, by two (a dog and a coworker both called Max) 0.72 - only an
    # adjudicator tells those apart
    attach_score: float = 0.70
    min_attach_similarity: float = 0.80
    # one name (by `names.name_keys`: "Postgres" = "PostgreSQL") in the same people's conversations is one
    # thing unless the two say it is different things ("Max is Dana's dog" / "Max is Dana's coworker")
    alias_attach_similarity: float = 0.40
    ambiguous_score: float = 0.60
    # facts - on the offline teacher's LoCoMo facts ("{title}: {restated fact}"), restatements of one fact
    # score 0.88-1.0 ("Jon is starting a dance studio" / "Jon wanna start a dance studio" 0.93), distinct
    # facts of one person mostly below 0.85 ("Jon looks for investors" / "Jon met some investors" 0.86)
    fact_attach_similarity: float = 0.88
    fact_alias_similarity: float = 0.80
    fact_ambiguous_similarity: float = 0.80
    # a restatement in other words: the same subject, mostly the same content stems, and close
    fact_restatement_overlap: float = 0.6
    fact_restatement_similarity: float = 0.72
    event_window_days: float = 7.0
    min_confidence: float = 0.25
    min_title_chars: int = 2
    refine_margin: float = 0.05
    # unordered pairs of types that may denote the same thing (an extractor's typing is not stable);
    # a pair across the name / fact families is never compatible
    compatible_types: tuple[str, ...] = (
        "project|entity",
        "belief|behavioral_pattern",
        "tension|belief",
        "goal|behavioral_pattern",
    )

    # reflective hypotheses: created only on episodes in several conversations (`support.PatternJudgement`)
    reflective_types: tuple[str, ...] = ("behavioral_pattern", "tension")
    pattern_min_episodes: int = 2
    pattern_min_conversations: int = 2
    pattern_support_similarity: float = 0.55
    # themes: patterns read off a person's facts (a content stem in facts of several conversations)
    derive_themes: bool = True
    theme_min_episodes: int = 3
    theme_min_conversations: int = 2
    theme_max_share: float = 0.15
    # an instance of a broader goal or habit (same subject, a shared content stem) supports it as evidence
    instance_types: tuple[str, ...] = ("goal", "behavioral_pattern", "belief")
    instance_similarity: float = 0.6
    # a theme (a name in lower case: "camping") is created once it is said in this many conversations
    theme_name_min_conversations: int = 2

    def compatible(self, a: str, b: str) -> bool:
        if type_family(a) != type_family(b):
            return False
        return a == b or f"{a}|{b}" in self.compatible_types or f"{b}|{a}" in self.compatible_types

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Decision:
    action: str  # create | attach | refine | reject
    concept_id: str | None  # the target of attach/refine
    reason_code: str
    rationale: str
    scores: dict
    duplicate_span: bool = False
    description: str | None = None  # a refine's new description


@dataclass(frozen=True)
class ConceptView:
    """A concept as the router sees it for one candidate: the concept, and what the loop knows of it
    relative to the candidate."""

    concept: ConceptHypothesis
    best_evidence_confidence: float
    holds_span: bool  # the concept already has the candidate's exact span as evidence
    # its evidence comes from conversations sharing a participant with the candidate's: "Max" in John's
    # chats and "Max" in Nate's are the same only if someone could be talking about one thing
    shares_participants: bool = True
    # it holds another value of a (subject, slot) the candidate states ("" when not): not the same fact
    other_value: str = ""


class Router:
    def __init__(self, rules: RouterRules | None = None, adjudicator: Adjudicator | None = None):
        self.rules = rules or RouterRules()
        self.adjudicator = adjudicator

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
        title = cand.canonical_title
        if len(normalise_name(title)) < r.min_title_chars:
            return "empty_title", f"title {cand.title!r} is too short to name a concept"
        return title_noise(title, cand.type)

    def route(self, cand: Candidate, hits: list[RetrievalHit], concepts: dict[str, ConceptView]) -> Decision:
        r = self.rules
        typed = [h for h in hits if r.compatible(cand.type, concepts[h.concept_id].concept.type)]
        reachable = [h for h in typed if concepts[h.concept_id].shares_participants]
        compatible = [h for h in reachable if not (h.graph >= 1.0 and h.lexical == 0.0)]
        scores = {
            "best": compatible[0].components() if compatible else None,
            "alternatives": [h.components() for h in hits[:4] if not compatible or h is not compatible[0]],
        }
        if not compatible:
            if reachable:
                why = "the only compatible concepts are co-mentioned in the same segment under other names"
                return Decision("create", None, "co_mentioned_distinct", why, scores)
            if typed:
                why = "the compatible concepts come only from conversations with none of this one's participants"
                return Decision("create", None, "other_participants", why, scores)
            why = (
                "no existing concepts"
                if not hits
                else f"no retrieved concept has a type compatible with {cand.type}"
            )
            return Decision("create", None, "no_match", why, scores)
        if type_family(cand.type) == "fact":
            return self._route_fact(cand, compatible, concepts, scores)
        best = compatible[0]
        strong = best.score >= r.attach_score and best.similarity >= r.min_attach_similarity
        conflict = summaries.roles_conflict(cand.description, concepts[best.concept_id].concept.description)
        alias = best.lexical >= 1.0 and best.similarity >= r.alias_attach_similarity and not conflict
        if strong or alias:
            rule = (
                f"fused {best.score:.3f} ≥ {r.attach_score} and cosine {best.similarity:.3f} ≥ {r.min_attach_similarity}"
                if strong
                else f"shared title/alias and cosine {best.similarity:.3f} ≥ {r.alias_attach_similarity}"
            )
            return self._match(cand, concepts[best.concept_id], rule, scores)
        if best.score >= r.ambiguous_score:
            if self.adjudicator is not None:
                offered = [h for h in compatible if h.score >= r.ambiguous_score][:3]
                return self._adjudicate(cand, offered, concepts, scores)
            return Decision(
                "create",
                None,
                "ambiguous_create",
                f"fused {best.score:.3f} in the ambiguous band [{r.ambiguous_score}, {r.attach_score}) and no "
                "adjudicator: a new concept (a merge later is cheaper than a wrong attach)",
                scores,
            )
        return Decision("create", None, "novel", f"best fused {best.score:.3f} < {r.ambiguous_score}", scores)

    def _route_fact(
        self, cand: Candidate, compatible: list[RetrievalHit], concepts: dict[str, ConceptView], scores: dict
    ) -> Decision:
        """The same fact: near-identical restatement (or a shared title and close), at a compatible time
        when an event is involved. The most similar such concept wins."""
        r = self.rules
        by_similarity = sorted(compatible, key=lambda h: (-h.similarity, h.concept_id))
        blocked: tuple[RetrievalHit, str] | None = None
        other: tuple[RetrievalHit, str] | None = None
        for h in by_similarity:
            target = concepts[h.concept_id]
            rule = self._same_fact(cand, target.concept, h)
            if not rule:
                continue
            if target.other_value:  # "I live in Seattle now" restates no "I live in Portland"
                other = other or (h, target.other_value)
                continue
            if "event" in (cand.type, target.concept.type):
                clash = self._time_clash(cand, target)
                if clash:
                    blocked = blocked or (h, clash)
                    continue
                rule += "; times compatible"
            scores["best"] = h.components()
            return self._match(cand, target, rule, scores)
        if blocked is not None:
            scores["best"] = blocked[0].components()
            return Decision(
                "create",
                None,
                "event_time_differs",
                f"a concept says the same words (cosine {blocked[0].similarity:.3f}) but {blocked[1]}: another event",
                scores,
            )
        if other is not None:
            scores["best"] = other[0].components()
            why = f"a concept says nearly the same (cosine {other[0].similarity:.3f}) but {other[1]}: another value"
            return Decision("create", None, "other_value", why, scores)
        by_similarity = [h for h in by_similarity if not concepts[h.concept_id].other_value]
        if not by_similarity:
            return Decision("create", None, "other_value", "every close fact holds another value", scores)
        top = by_similarity[0]
        if top.similarity >= r.fact_ambiguous_similarity:
            if self.adjudicator is not None:
                offered = [h for h in by_similarity if h.similarity >= r.fact_ambiguous_similarity][:3]
                return self._adjudicate(cand, offered, concepts, scores)
            return Decision(
                "create",
                None,
                "ambiguous_create",
                f"closest fact at cosine {top.similarity:.3f}, in the ambiguous band "
                f"[{r.fact_ambiguous_similarity}, {r.fact_attach_similarity}) and no adjudicator: a new concept",
                scores,
            )
        return Decision(
            "create",
            None,
            "novel",
            f"closest compatible fact at cosine {top.similarity:.3f} < {r.fact_ambiguous_similarity}",
            scores,
        )

    def _same_fact(self, cand: Candidate, concept: ConceptHypothesis, h: RetrievalHit) -> str:
        """Why the candidate restates the concept's fact ("" when it does not): near-identical, a shared
        title and close, or the same subject saying mostly the same content in other words."""
        r = self.rules
        if h.similarity >= r.fact_attach_similarity:
            return f"same fact: cosine {h.similarity:.3f} ≥ {r.fact_attach_similarity}"
        if h.lexical >= 1.0 and h.similarity >= r.fact_alias_similarity:
            return f"same fact: shared title and cosine {h.similarity:.3f} ≥ {r.fact_alias_similarity}"
        title = cand.canonical_title
        if h.similarity >= r.fact_restatement_similarity and fact_subject(title) == fact_subject(
            concept.title
        ):
            overlap = stem_overlap(salient_stems(title), salient_stems(concept.title))
            if overlap >= r.fact_restatement_overlap:
                return (
                    f"restatement: same subject, content overlap {overlap:.2f} ≥ {r.fact_restatement_overlap}, "
                    f"cosine {h.similarity:.3f} ≥ {r.fact_restatement_similarity}"
                )
        return ""

    def _time_clash(self, cand: Candidate, target: ConceptView) -> str:
        """Why the candidate's time and the concept's cannot be one event ("" when they can)."""
        w = self.rules.event_window_days
        told = cand.message_created_at
        mine = interval(cand.description, told, told, w)
        concept = target.concept
        theirs = interval(concept.description, concept.first_seen, concept.last_seen, w)
        if times_compatible(mine, theirs):
            return ""
        return f"its time {mine[0]}..{mine[1]} is not the concept's {theirs[0]}..{theirs[1]}"

    def _match(self, cand: Candidate, target: ConceptView, rule: str, scores: dict) -> Decision:
        r = self.rules
        concept = target.concept
        if target.holds_span:
            return Decision(
                "attach",
                concept.concept_id,
                "duplicate_span",
                f"{rule}; span already held as evidence",
                scores,
                True,
            )
        stronger = (
            concept.state == "weak" and cand.confidence >= target.best_evidence_confidence + r.refine_margin
        )
        if type_family(concept.type) == "name":
            description, code = summaries.summary(
                [concept.title, *concept.aliases], concept.description, cand.description, cand.usage, stronger
            )
            why = {
                "refine_definition": "the candidate says better what the thing is",
                "refine_weak": f"concept is weak and the candidate (confidence {cand.confidence:.2f}) is more "
                f"confident than its evidence ({target.best_evidence_confidence:.2f})",
                "refine_context": f"a new usage context ({cand.usage!r})",
            }
            if code is not None:
                return Decision(
                    "refine", concept.concept_id, code, f"{rule}; {why[code]}: description rewritten", scores,
                    description=description,
                )  # fmt: skip
            return Decision("attach", concept.concept_id, "match", rule, scores)
        candidate = cand.description.strip()
        if stronger and normalise_name(candidate) != normalise_name(concept.description):
            return Decision(
                "refine",
                concept.concept_id,
                "refine_weak",
                f"{rule}; concept is weak and the candidate (confidence {cand.confidence:.2f}) is more confident "
                f"than its evidence ({target.best_evidence_confidence:.2f}): description rewritten",
                scores,
                description=candidate,
            )
        if described_interval(concept.description) is None and described_interval(candidate) is not None:
            return Decision(
                "refine",
                concept.concept_id,
                "refine_dated",
                f"{rule}; the candidate dates the fact: description rewritten",
                scores,
                description=candidate,
            )
        new_words = set(salient_stems(cand.canonical_title)) - set(tokenize(concept.description))
        grown = summaries.grow_fact(concept.description, candidate, new_words)
        if grown is not None:
            return Decision(
                "refine",
                concept.concept_id,
                "refine_grown",
                f"{rule}; the restatement adds {', '.join(sorted(new_words))}: description grows",
                scores,
                description=grown,
            )
        return Decision("attach", concept.concept_id, "match", rule, scores)

    def _adjudicate(
        self, cand: Candidate, offered: list[RetrievalHit], concepts: dict[str, ConceptView], scores: dict
    ) -> Decision:
        options = [ConceptOption(concepts[h.concept_id].concept, h.components()) for h in offered]
        name = self.adjudicator.name
        try:
            answer = self.adjudicator.adjudicate(cand, options)
        except LLMConfigurationError:
            raise  # every further call would fail the same way: stop instead of deciding by rule
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
            if answer.concept_id not in {o.concept.concept_id for o in options}:
                return Decision(
                    "create",
                    None,
                    "adjudicator_invalid",
                    f"{why} (chose {answer.concept_id!r}, not an offered concept; rule: create)",
                    scores,
                )
            return self._match(cand, concepts[answer.concept_id], why, scores)
        return Decision("create", None, "adjudicator_create", why, scores)
