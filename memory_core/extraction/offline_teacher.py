"""The offline teacher: deterministic, fast, no network. It fills the same `SegmentExtraction` an LLM would.

Titles and descriptions follow the contract in `memory_core/ontology/concepts.py`:
- people's first-person statements ("I ...", "my ...": plans, preferences, possessions, habits, dated
  events, worries) become goal / belief / event / behavioral_pattern / tension candidates; the evidence is
  the clause, verbatim; the description restates the fact in the third person with the speaker's name (or
  "the user") and resolves relative dates against the message time ("yesterday" → 7 May 2023), so it
  carries the words a later question would use; the title is the fact's short canonical handle
  (`fact_title`: "Caroline went to a LGBTQ support group");
- named entities (and project phrases after "building / writing / opening ...") become entity / project
  candidates titled by the name and described by what the text says they are ("Priya is the user's
  sister.", "Oscar is Caroline's guinea pig.", "Bailey is a cat, mentioned by Melanie."), else
  "<name>, mentioned by <speaker>." - never by the sentence they happened to occur in;
- reactions come from the lexicon classifier (`reactions.py`).
Honest about what it is: `describe()` says teacher=offline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_core.extraction.entities import capitalised_mid_sentence, find_entities, find_projects
from memory_core.extraction.reactions import FEELINGS, classify_reactions
from memory_core.extraction.teacher import MessageView, SegmentInput, Teacher, TeacherResult
from memory_core.extraction.text import (
    ADVERBS,
    FIRST_PERSON,
    _is_past,
    clauses,
    clean_clause,
    explicit_date,
    norm_apostrophes,
    resolve_relative_date,
    restate,
    sentences,
    words_of,
)
from memory_core.ontology.concepts import NAME_TYPES
from memory_core.ontology.extraction import (
    CandidateRelation,
    CandidateSpan,
    ConceptCandidate,
    ReactionCandidate,
    SegmentExtraction,
)
from memory_core.ontology.reactions import UserReaction
from memory_core.ontology.titles import fact_title
from memory_core.revision.slot_rules import offline_claims

_GENERIC_DEFINITION = ", mentioned by "
RULES_VERSION = "offline/v2"  # v2: fact titles per the title contract, entity descriptions as definitions

_TENSION = re.compile(
    r"\b(worried|worry|worrying|nervous|anxious|stress(?:ed|ful)?|struggl\w*|stuck|keep (?:running into|getting|having)|"
    r"can't seem|problems?|issues?|crash\w*|errors?|bugs?|broken|fail\w*|conflict\w*|torn between|afraid|scared|"
    r"concerned|overwhelm\w*|exhausted|tired of|burn(?:ed|t) out|difficult|hard time|hard to|tough|frustrat\w*|"
    r"haven't heard|still haven't|took forever|can't afford|behind on|pressure|argu\w*|fight|fought|disagree\w*|"
    r"doesn't work|won't work|not working|lonely|injur\w*|sick of|hurts?|pain|deadlines?|debts?|lost my|"
    r"can't sleep|insomnia|dread\w*|trouble|troubles|hard time|(?:it|my \w+|the \w+) keeps \w+ing)\b"
)
_NEGATED = re.compile(r"\b(?:without|no|not|never|don't|didn't|isn't|wasn't|less)\s+(?:\w+\s+)?$")
_CONTRAST = re.compile(r"\b(wants?|says?|said|insists?|keeps?|won't|can't|doesn't|didn't|only|no time|too)\b")
# courtesy toward the listener, not a fact about the speaker
_PHATIC = re.compile(
    r"^(?:i'?ll|i will|i'd|i would) (?:\w+ )?(?:keep you posted|check (?:it|that|them) out|let you know|add (?:it|that) to my list|"
    r"look into it|give it a (?:try|shot|go)|keep (?:that|it) in mind|think about it|remember that|take (?:a look|that)|"
    r"love to (?:see|hear|read)|be sure to)|^i'?m sure\b|^i can (?:imagine|tell|see)\b|^i (?:hope|bet) (?:you|your|it|that)\b|"
    r"^i'?m (?:so |really )?(?:glad|happy|sorry) (?:to hear|for you|you)|^i (?:totally |completely )?(?:agree|understand)\b|"
    r"^i (?:know|see) what you mean|^thanks?\b|^thank you\b"
)
_IMPERATIVE_STARTS = {"believe", "keep", "remember", "make", "stay", "take", "don't", "do", "try", "go", "be", "let",
                      "look", "check", "trust", "never", "always", "just", "you", "you're", "your"}  # fmt: skip
_DANGLING = {
    "for",
    "to",
    "of",
    "with",
    "at",
    "in",
    "on",
    "from",
    "about",
    "by",
    "into",
    "than",
    "like",
    "and",
    "or",
}
_GOAL = re.compile(
    r"\b(want to|wanna|want|wants|would like|'d like|'d love to|would love to|plan to|plans to|planning|plan is|"
    r"going to (?!(?:the|a|an|my|our|his|her|their|this|that|church|school|work|bed|class|boot)\b)|gonna|hope to|hoping to|aim to|aiming|my goal|goal is|intend\w*|need to|needs to|have to|has to|"
    r"got to|trying to|try to|thinking (?:about|of)|considering|decided to|looking to|looking for|will|'ll|"
    r"dream of|dream is|wish|saving (?:up )?for|someday|one day|next (?:month|year|spring|summer|fall|autumn|winter)|"
    r"keen on|eager to|can't wait to|ready to|determined to|working towards?|bucket list|signing up|applying)\b"
)
_PATTERN = re.compile(
    r"\b(usually|always|often|normally|typically|generally|regularly|every (?:day|morning|night|evening|week|"
    r"weekend|month|year|other|single|time|sunday|monday|tuesday|wednesday|thursday|friday|saturday)|"
    r"each (?:day|morning|week|month|year)|most (?:days|mornings|nights|evenings|weekends)|on weekends|daily|weekly|"
    r"nightly|habit|routine|tend to|used to|(?:once|twice|\w+ times) a (?:day|week|month|year)|days a week|"
    r"lately|these days|nowadays|all the time|whenever|ve been \w+ing|have been \w+ing)\b"
)
_OPINION = re.compile(
    r"\b(better|worse|best|worst|favou?rite|overrated|underrated|should|shouldn't|important|matters|worth|"
    r"in my (?:view|opinion)|hooked|obsessed|fan of|more than|less than|too (?:expensive|much|little)|way more|"
    r"terrible|awful|prefer|love|hate|can't stand|enjoy)\b"
)
_STATE = re.compile(
    r"^(?:i'm (?:a|an|the|from|based|married|single|vegan|vegetarian)\b|i am (?:a|an|the|from)\b|"
    r"(?:i|we) (?:\w+ )?(?:have|has|own|live|lives|work as|work at|work for|grew up|come from)\b|"
    r"my \w+(?: \w+)? (?:is|are|was|were|has|have)\b|i'm \w+ years old|i'm allergic|"
    r"(?:this|that|these|those|it|they) (?:is|are|was|were) (?:my|our)\b)"
)
_ATTITUDE = {"think", "thought", "believe", "believed", "feel", "felt", "love", "loved", "like", "liked", "prefer",
             "preferred", "hate", "hated", "enjoy", "enjoyed", "adore", "know", "knew", "guess", "suppose",
             "reckon", "find", "dislike", "appreciate", "admire", "miss", "missed", "doubt", "can't"}  # fmt: skip
_NON_ACTION = {"am", "have", "need", "want", "know", "mean", "guess", "hope", "wish", "agree", "see", "understand",
               "remember", "forget", "wonder", "bet", "promise", "doubt", "recommend", "suggest", "get", "got",
               "do", "don't", "can", "could", "will", "would", "should", "must", "might", "may", "is", "are",
               "appreciate", "say", "tell", "ask", "think", "love", "like", "apologize", "believe", "just", "totally",
               "heard", "hear", "feel"}  # fmt: skip
_AUX = {"do", "does", "did", "don't", "didn't", "am", "'m", "have", "'ve", "been", "was", "were", "will", "would",
        "can", "could", "'ll", "'d", "had", "really", "also"}  # fmt: skip
_COMMON_OPENERS = {"it", "it's", "its", "there", "there's", "things", "life", "this", "that", "that's", "these",
                   "those", "the", "a", "an", "last", "every", "everything", "nothing", "some", "something",
                   "what", "being", "having", "getting", "here's", "work", "family", "moments", "seeing",
                   "playing", "doing", "making", "trying", "finding", "reading", "writing", "such", "so"}  # fmt: skip
_YOU = {"you", "you're", "your", "you've", "you'll", "you'd", "yourself", "yours", "ya"}
_TEMPORAL_OPENERS = {"when", "while", "once", "as", "after", "before"}
_SUBJECTS = {"i", "we", "i'm", "i've", "i'd", "i'll", "we're", "we've", "we'll", "im", "ive"}
_QUESTION_START = {"can", "could", "would", "will", "should", "do", "does", "did", "is", "are", "was", "were", "what",
                   "what's", "how", "how's", "why", "where", "when", "which", "who", "whom", "whose", "any", "have",
                   "has", "shall", "may", "might", "isn't", "aren't", "don't", "didn't", "won't", "wanna"}  # fmt: skip
_UNMARKED_QUESTION = re.compile(
    r"^(?:how|what|why|which|who|where|can|could|would|should|is|are|do|does|did)\s+(?:do|does|did|can|could|"
    r"would|should|is|are|was|were|you|to|there|it|much|many|long|often)\b",
    re.IGNORECASE,
)
_FEELING_WORDS = {w for group in FEELINGS for w in re.findall(r"[a-z]+", group)}
_INTENSIFIERS = {"so", "really", "very", "super", "extremely", "incredibly", "totally", "quite", "pretty", "a", "bit",
                 "little", "kind", "of", "kinda", "just", "too", "feel", "feeling", "felt", "right", "now", "today"}  # fmt: skip


@dataclass
class _Draft:
    title: str
    type: str
    description: str
    confidence: float
    evidence: list[tuple[MessageView, int, int]] = field(default_factory=list)
    relations: list[tuple[str, str, float]] = field(default_factory=list)


def main_verb(ws: list[str]) -> tuple[str, set[str]]:
    """The first verb after a first-person subject near the start of the clause ("Every Sunday I meal-prep"),
    and the auxiliaries seen on the way. ("", set()) when the first person is subordinate ("the rent is more
    than I paid")."""
    for i, w in enumerate(ws[:4]):
        if w in _SUBJECTS:
            aux = {w.split("'")[1]} if "'" in w else set()
            for nxt in ws[i + 1 : i + 6]:
                if nxt in ADVERBS or nxt in _AUX:
                    if nxt in _AUX:
                        aux.add(nxt)
                    continue
                return nxt, aux
            return "", aux
    return "", set()


def classify_statement(clause: str, connector: str, first_person: bool) -> tuple[str | None, float]:
    """(concept type, confidence) of a statement clause, or (None, 0) when it states nothing durable."""
    low = norm_apostrophes(clause).lower()
    ws = words_of(clause)
    verb, aux = main_verb(ws)
    tension_cue = any(
        not _NEGATED.search(low[max(0, m.start() - 12) : m.start()]) for m in _TENSION.finditer(low)
    )
    contrast = connector == "but" and first_person and _CONTRAST.search(low)
    if tension_cue or contrast:
        if first_person:
            return "tension", 0.7
        if ws and ws[0] not in _IMPERATIVE_STARTS:
            return "tension", 0.4
        return None, 0.0
    if not first_person:
        if explicit_date(low) and (_is_past(verb) or any(_is_past(w) for w in ws[1:4])):
            return "event", 0.4
        return None, 0.0
    if _GOAL.search(low):
        return "goal", 0.7
    if verb in _ATTITUDE or low.startswith(("i don't like", "i do not like")):
        return "belief", 0.65
    if _PATTERN.search(low):
        return "behavioral_pattern", 0.65
    if (
        verb
        and not aux
        and not _is_past(verb)
        and not verb.endswith("ing")
        and verb not in _NON_ACTION
        and verb.isalpha()
    ):
        if not re.match(r"^(?:i|we) (?:\w+ )?(?:live|work as|own)\b", low):
            return "behavioral_pattern", 0.5
    # after "I'm" an -ed word is a state ("I'm confused", "I'm hooked"), not something that happened
    stative = bool(aux & {"m", "'m", "am", "re", "'re"})
    past = (_is_past(verb) and not stative) or bool(aux & {"did", "was", "were", "had"})
    if ws[0] in {"my", "our"}:  # "my doctor said ...": the verb follows a short noun phrase
        past = past or any(_is_past(w) for w in ws[1:5])
    if past or explicit_date(low) or re.search(r"\b(just got|recently)\b", low):
        return "event", 0.6
    if stative and verb.endswith("ing") and verb.isalpha() and not _FEELING_WORDS & set(ws):
        return "behavioral_pattern", 0.5  # an ongoing activity: "I'm writing articles about fantasy novels"
    if _OPINION.search(low):
        return "belief", 0.55
    if _STATE.search(low):
        return "belief", 0.55
    return None, 0.0


def _feeling_only(ws: list[str]) -> bool:
    rest = [w for w in ws if w not in _SUBJECTS and w not in _INTENSIFIERS and w not in _AUX]
    return len(rest) <= 2 and any(w in _FEELING_WORDS for w in rest)


def _subject(m: MessageView) -> str:
    """How a description names the speaker inside a sentence ("the user", "Caroline", "the assistant")."""
    subject = m.subject if m.is_person else "The assistant"
    return subject if subject not in ("The user", "The assistant") else subject.lower()


def _describe(m: MessageView, clause: str, future: bool, dated: bool = True) -> str:
    subject = m.subject if m.is_person else "The assistant"
    possessive = (
        f"{subject}'s"
        if subject[0].isupper() and subject not in ("The user", "The assistant")
        else f"{subject.lower()}'s"
    )
    sentence = restate(clause, subject if subject not in ("The user",) else "the user", possessive)
    if m.is_person and subject.casefold() not in sentence.casefold():
        # "It's been tough" said by Jon is Jon's fact, not anyone's: say whose it is
        first = sentence.split(" ", 1)[0]
        if first.casefold().strip("'’") in _COMMON_OPENERS or first.endswith("ing"):
            sentence = sentence[:1].lower() + sentence[1:]
        sentence = f"{subject} says {sentence}"
    when = resolve_relative_date(clause, m.created_at, future=future) if dated else None
    return sentence.rstrip(".!?") + (f" ({when})" if when else "") + "."


def _definition_rank(description: str) -> int:
    """2: says what the thing is and whose ("... is Caroline's guinea pig"); 1: what it is; 0: who named it."""
    if _GENERIC_DEFINITION not in description:
        return 2
    return 1 if " is " in description else 0


class OfflineTeacher(Teacher):
    extractor = RULES_VERSION
    uses_llm = False

    def __init__(self, max_assistant_entities: int = 4):
        self.max_assistant_entities = max_assistant_entities

    def describe(self) -> dict:
        return {"teacher": "offline", "extractor": self.extractor}

    def extract(self, segment: SegmentInput) -> TeacherResult:
        drafts: dict[tuple[str, str], _Draft] = {}
        reactions: list[ReactionCandidate] = []
        speakers = {s.lower() for s in segment.speakers} | {
            s.split()[0].lower() for s in segment.speakers if s
        }
        elsewhere: set[str] = set()
        for m in segment.messages:
            elsewhere |= capitalised_mid_sentence(m.text, m.start, m.end)
        person_text = " ".join(m.piece for m in segment.messages if m.is_person).casefold()
        for m in segment.messages:
            projects = find_projects(m.text, m.start, m.end) if m.is_person else []
            if m.is_person:
                self._statements(m, drafts)
                for a, b in projects:
                    phrase = m.text[a:b]
                    title = re.sub(r"^(?:a|an|the|my|our)\s+", "", phrase, flags=re.I)
                    desc = _describe(m, self._clause_around(m, a, b), future=False)
                    definition = f"{title[:1].upper()}{title[1:]} is a project of {_subject(m)}: {desc}"
                    self._add(drafts, "project", title, definition, 0.6, m, a, b)
                for r in classify_reactions(m.text, m.start, m.end):
                    reactions.append(
                        ReactionCandidate(
                            reaction=UserReaction(
                                state=r.state,
                                state_raw=r.state_raw,
                                intensity=r.intensity,
                                valence=r.valence,
                                epistemic_status=r.epistemic_status,
                                evidence_message_id=m.ref,
                            ),
                            cue=m.text[r.cue_start : r.cue_end],
                        )
                    )
            hits = find_entities(m.text, m.start, m.end, speakers, elsewhere, m.is_person)
            hits = [
                h for h in hits if not any(a <= h.start and h.end <= b for a, b in projects)
            ]  # "EP" in "our first EP"
            if not m.is_person:
                hits = self._assistant_entities(m, hits, person_text)
            for hit in hits:
                self._add(
                    drafts,
                    hit.kind,
                    hit.name,
                    self._entity_description(m, hit),
                    0.6 if m.is_person else 0.45,
                    m,
                    hit.start,
                    hit.end,
                )
        concepts = [self._candidate(d) for d in drafts.values()]
        return TeacherResult(SegmentExtraction(concepts=concepts, reactions=reactions), "ok")

    def _assistant_entities(self, m: MessageView, hits: list, person_text: str) -> list:
        """An assistant's long answers name many things; keep the ones the conversation is about: named by a
        person in this segment, names of several words or technical names, or repeated; at most a few."""
        piece = m.piece
        kept = []
        for h in hits:
            name = h.name
            shared = name.casefold() in person_text
            distinctive = len(name.split()) > 1 or any(c.isupper() for c in name[1:]) or "-" in name
            repeated = piece.count(name) > 1
            if shared or distinctive or repeated:
                kept.append((not shared, h.start, h))
        return [h for _, _, h in sorted(kept, key=lambda k: (k[0], k[1]))][: self.max_assistant_entities]

    # ------------------------------------------------------------------------------------ statements
    def _statements(self, m: MessageView, drafts: dict[tuple[str, str], _Draft]) -> None:
        for s, e in sentences(m.text, m.start, m.end):
            sentence = m.text[s:e]
            first = words_of(sentence[:40])[:1]
            if sentence.rstrip().endswith("?") and (
                not first or first[0] in _QUESTION_START or "you" in words_of(sentence)[:3]
            ):
                continue
            if _UNMARKED_QUESTION.match(norm_apostrophes(sentence)):
                continue  # "how do i know that a project uses sops": a query typed without "?"
            previous: _Draft | None = None
            for cs, ce, connector in clauses(m.text, s, e):
                cs, ce = clean_clause(m.text, cs, ce)
                clause = m.text[cs:ce]
                ws = words_of(clause)
                if (
                    len(ws) < 3
                    or ws[0] in {"if", "unless", "whether", "whenever"}
                    or _feeling_only(ws)
                    or ws[-1] in _DANGLING
                ):
                    previous = None
                    continue
                if _PHATIC.search(norm_apostrophes(clause).lower()):
                    previous = None
                    continue
                first_person = any(w in FIRST_PERSON for w in ws)
                if (ws[0] in _YOU or (not first_person and _YOU & set(ws))) and not (
                    {"i", "i'm", "i've", "i'd"} & set(ws)
                ):
                    previous = (
                        None  # about or to the listener ("Have faith in yourself"): not the speaker's fact
                    )
                    continue
                kind, confidence = classify_statement(clause, connector, first_person)
                if kind is None or (ws[0] in _TEMPORAL_OPENERS and kind != "event"):
                    previous = None  # "When I look after myself, ...": the condition of the next clause
                    continue
                future = kind in ("goal",) or bool(
                    re.search(r"\b(next|coming|tomorrow|will|'ll|going to)\b", clause.lower())
                )
                description = _describe(m, clause, future)
                title = fact_title(description) or fact_title(_describe(m, clause, future, dated=False))
                draft = self._add(drafts, kind, title, description, confidence, m, cs, ce)
                if previous is not None and draft is not previous:
                    if connector in ("because", "since"):
                        draft.relations.append((previous.title, "causes", 0.5))
                    elif connector == "so":
                        rel = "enables" if re.match(r"(?:i|we) can\b", clause.lower()) else "causes"
                        previous.relations.append((draft.title, rel, 0.5))
                previous = draft

    @staticmethod
    def _clause_around(m: MessageView, a: int, b: int) -> str:
        for s, e in sentences(m.text, m.start, m.end):
            if s <= a and b <= e:
                for cs, ce, _ in clauses(m.text, s, e):
                    if cs <= a and b <= ce:
                        cs, ce = clean_clause(m.text, cs, ce)
                        return m.text[cs:ce]
                return m.text[s:e]
        return m.text[a:b]

    @staticmethod
    def _entity_description(m: MessageView, hit) -> str:
        """What the entity is, as the text says it ("Oscar is Caroline's guinea pig."), else who named it:
        never the sentence it occurred in, which is a fact of its own."""
        who = _subject(m)
        if hit.role and hit.role_owner:
            return f"{hit.name} is {who}'s {hit.role}."
        if hit.role:
            article = "an" if hit.role[:1].lower() in "aeiou" else "a"
            return f"{hit.name} is {article} {hit.role}{_GENERIC_DEFINITION}{who}."
        return f"{hit.name}{_GENERIC_DEFINITION}{who}."

    # ------------------------------------------------------------------------------------ assembly
    @staticmethod
    def _add(
        drafts, kind: str, title: str, description: str, confidence: float, m: MessageView, a: int, b: int
    ) -> _Draft:
        # a name is one candidate per segment whatever it is said about; a fact is one per restatement
        key = (
            (kind, title.casefold())
            if kind in NAME_TYPES
            else (kind, title.casefold(), description.casefold())
        )
        draft = drafts.get(key)
        if draft is None:
            draft = drafts[key] = _Draft(title, kind, description, confidence)
        elif kind in NAME_TYPES and _definition_rank(description) > _definition_rank(draft.description):
            draft.description = (
                description  # "Oscar is Caroline's guinea pig." beats "Oscar, mentioned by ..."
            )
        if not any(v.ref == m.ref and x == a and y == b for v, x, y in draft.evidence):
            draft.evidence.append((m, a, b))
        draft.confidence = max(draft.confidence, confidence)
        return draft

    @staticmethod
    def _candidate(d: _Draft) -> ConceptCandidate:
        return ConceptCandidate(
            title=d.title,
            type=d.type,
            description=d.description,
            aliases=[],
            confidence=round(min(1.0, d.confidence + 0.05 * (len(d.evidence) - 1)), 3),
            evidence=[
                CandidateSpan(
                    message_ref=m.ref, quote=m.text[a:b], char_start=a - m.start, char_end=b - m.start
                )
                for m, a, b in d.evidence
            ],
            relations=[
                CandidateRelation(target_title=t, relation=r, confidence=c)
                for t, r, c in d.relations
                if t != d.title
            ],
            # the revisable facts of the clauses, by the revision layer's slot rules
            claims=list(
                {
                    c.model_dump_json(): c
                    for m, a, b in d.evidence
                    for c in offline_claims(d.type, m.text[a:b], m.created_at, m.is_person)
                }.values()
            ),
        )
