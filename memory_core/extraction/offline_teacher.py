"""The offline teacher: deterministic, fast, no network. It fills the same `SegmentExtraction` an LLM would.

Titles and descriptions follow the contract in `memory_core/ontology/concepts.py`:
- people's statements about themselves and their world ("I ...", "my sister ...": plans, preferences,
  possessions, habits, dated events, worries) become goal / belief / event / behavioral_pattern / tension
  candidates, typed by the rules of `statements.py`; precision first, a clause whose subject is a pronoun, a
  gerund or missing ("It made me realize ...", "Seeing my kids ...") states no fact of anyone's; the evidence
  is the clause, verbatim; the description restates the fact in the third person with the speaker's name
  (or "the user"), "you" as the listener, negation and tense kept, and resolves relative dates against the
  message time ("yesterday" → 7 May 2023), so it carries the words a later question would use; the title
  is the fact's short canonical handle (`fact_title`: "Caroline went to a LGBTQ support group"); a title
  that is no well-formed statement is left for the memory loop to reject to residuals (`title_noise`);
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
from memory_core.extraction.statements import AUXILIARIES, SUBJECTS, classify_statement, clause_subject
from memory_core.extraction.teacher import MessageView, SegmentInput, Teacher, TeacherResult
from memory_core.extraction.text import (
    FIRST_PERSON,
    _is_past,
    clauses,
    clean_clause,
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
RULES_VERSION = "offline/v5"  # v3: precision first (a fact needs a subject), type rules, whole titles;
# v4: a shared image is an event only where a sentence presents it; v5: the speaker chat leaves implicit
# ("Got the tattoo …", "X is important to me")

# courtesy toward the listener, not a fact about the speaker
_PHATIC = re.compile(
    r"^(?:i'?ll|i will|i'd|i would) (?:\w+ )?(?:keep you posted|check (?:it|that|them) out|let you know|add (?:it|that) to my list|"
    r"look into it|give it a (?:try|shot|go)|keep (?:that|it) in mind|think about it|remember that|take (?:a look|that)|"
    r"love to (?:see|hear|read)|be sure to)|^i'?m sure\b|^i can (?:imagine|tell|see)\b|^i (?:hope|bet) (?:you|your|it|that)\b|"
    r"^i'?m (?:so |really )?(?:glad|happy|sorry) (?:to hear|for you|you)|^i (?:totally |completely )?(?:agree|understand)\b|"
    r"^i (?:know|see) what you mean|^thanks?\b|^thank you\b|^i (?:didn't|did not|never) know (?:about|that)\b|"
    r"\bthe same way\b|^(?:me too|same here)\b|\b(?:calling|call|naming|name) it\b"
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
_COMMON_OPENERS = {"it", "it's", "its", "there", "there's", "things", "life", "this", "that", "that's", "these",
                   "those", "the", "a", "an", "last", "every", "everything", "nothing", "some", "something",
                   "what", "being", "having", "getting", "here's", "work", "family", "moments", "seeing",
                   "playing", "doing", "making", "trying", "finding", "reading", "writing", "such", "so"}  # fmt: skip
_YOU = {"you", "you're", "your", "you've", "you'll", "you'd", "yourself", "yours", "ya"}
_TEMPORAL_OPENERS = {"when", "while", "once", "as", "after", "before"}
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
# a sentence that presents an image, and the "a photo of" a caption starts with
_PRESENTS = re.compile(
    r"\b(?:this|these|here(?:'s| is| are)|check (?:it|this|these) out|check out|look at|take a look|pic|photo|"
    r"picture|snap|shot|made|did|painted|drew|took|got|finished|found)\b",
    re.IGNORECASE,
)
_IMAGE_KIND = re.compile(
    r"^(?:a |an )?(?:close up |closeup |black and white )?(?:photograph|photography|photo|picture|image|pic|snapshot) of ",
    re.IGNORECASE,
)
_SHORT_STATE = re.compile(
    r"^(?:i'm|i am|we're) (?:vegan|vegetarian|pregnant|married|divorced|engaged|retired|single)$"
)
_WORKS_ON = re.compile(
    r"^(?:i|we)(?:'m| am|'re| are|'ve been| have been)? (?:\w+ )?(?:building|writing|developing|making|creating|"
    r"designing|coding|working on|starting|launching|opening|recording)\b"
)
# a sentence that drops its "I", as chat does ("Got the tattoo a few years ago", "Just went hiking")
_ELLIPTIC_LEAD = {"just", "finally", "recently", "also", "actually", "then"}
_ELLIPTIC_PAST = set(
    "got went took started finished made bought visited tried joined signed moved met saw ran painted picked "
    "found adopted passed won booked watched baked cooked spent had did learned built hiked climbed attended "
    "volunteered celebrated played wrote drew opened launched quit lost migrated deployed fixed switched "
    "upgraded installed shipped released rewrote refactored".split()
)
# what matters to the speaker, said of the thing: "Improving education is particularly interesting to me",
# "Dancing makes me so happy" — the speaker's belief, restated as one ("I find …")
_MATTERS_TO_ME = re.compile(
    r"^(?P<what>.+?)\s+(?:is|are|was|were|has been|have been)\s+(?P<how>(?:\w+\s+)?(?:important|interesting|"
    r"special|meaningful|precious|dear|inspiring|everything))\s+(?:to|for)\s+me\b",
    re.IGNORECASE,
)
_MAKES_ME = re.compile(
    r"^(?P<what>.+?)\s+(?:makes|made)\s+me\s+(?:feel\s+)?(?:so\s+|really\s+|very\s+)?(?:happy|calm|joyful|alive|"
    r"free|proud|grateful|relaxed|peaceful|invincible|good|great|motivated|inspired)\b",
    re.IGNORECASE,
)
# a subject that names no thing of the speaker's ("Both of them are special to me", "Nothing is more …")
_PRONOUN_THING = {
    "it", "this", "that", "these", "those", "which", "they", "he", "she", "you", "everything", "nothing",
    "something", "anything", "both", "all", "mine", "yours", "each", "none", "one", "someone", "everyone",
}  # fmt: skip
# what follows a past verb when the sentence is an idiom or about someone else ("Made my day!", "Got it",
# "Took me ages", "Made me think of you", "Passed away last year, my grandma did")
_NOT_ELLIPTIC_NEXT = {"me", "it", "you", "your", "us", "him", "her", "them", "away"}
_IDIOMS = (("made", "my", "day"), ("made", "my", "week"), ("had", "my", "doubts"))
# a clause that thanks or praises the listener ("Played well yesterday, congrats!")
_TO_THE_LISTENER = {"thanks", "thank", "congrats", "congratulations", "cheers"}


def _said_by_speaker(clause: str, ws: list[str], connector: str) -> str | None:
    """The clause restated with the speaker as its subject when chat leaves the speaker implicit: a
    sentence opening on a past verb ("Got the tattoo …" → "I got the tattoo …"), or a thing said to matter
    to the speaker ("X is important to me" → "I find X important", "X makes me happy" → "I find X makes me
    happy"); None when the clause has a subject of its own."""
    lead = 1 if ws and ws[0] in _ELLIPTIC_LEAD else 0
    if (
        connector == ""
        and len(ws) > lead + 1
        and ws[lead] in _ELLIPTIC_PAST
        and ws[lead + 1] not in _NOT_ELLIPTIC_NEXT
        and tuple(ws[lead : lead + 3]) not in _IDIOMS
        and not _TO_THE_LISTENER & set(ws)
    ):
        return f"I {clause[:1].lower()}{clause[1:]}"
    text = norm_apostrophes(clause)
    matters = _MATTERS_TO_ME.match(text)
    if matters and _a_thing(matters.group("what")):
        return f"I find {_mid_sentence(matters.group('what'))} {matters.group('how')}"
    makes = _MAKES_ME.match(text)
    if makes and _a_thing(makes.group("what")):
        return f"I find {_mid_sentence(text[: makes.end()])}"
    return None


def _a_thing(phrase: str) -> bool:
    """Whether a clause's opening phrase names a thing: not a pronoun or quantifier, not cut by a comma
    ("Family, which is important to me, …": the phrase is a relative clause's head, not the subject)."""
    first = words_of(phrase)[:1]
    return bool(first) and first[0] not in _PRONOUN_THING and "," not in phrase


def _mid_sentence(phrase: str) -> str:
    """A sentence's opening phrase moved inside another: its first word lower-cased unless it is a name."""
    first = phrase.split(" ", 1)[0]
    common = first.lower() in {"the", "a", "an", "my", "our", "being", "having"} or first.lower().endswith(
        "ing"
    )
    return f"{phrase[:1].lower()}{phrase[1:]}" if common else phrase


# a thing shown to the listener: "Here's a photo of my horse painting", "This is our latest work"
_SHOWN = re.compile(
    r"^(?:here(?:'s| is| are)|this is|these are|check out|look at)\s+(?:(?:a|the|some|another)\s+)?"
    r"(?:(?P<photo>(?:photo|pic|picture|snap|shot|video|sketch|drawing)s?)\s+(?:of|from)\s+)?(?P<what>.{3,})$",
    re.IGNORECASE,
)


@dataclass
class _Draft:
    title: str
    type: str
    description: str
    confidence: float
    evidence: list[tuple[MessageView, int, int]] = field(default_factory=list)
    relations: list[tuple[str, str, float]] = field(default_factory=list)


def _feeling_only(ws: list[str]) -> bool:
    rest = [w for w in ws if w not in SUBJECTS and w not in _INTENSIFIERS and w not in AUXILIARIES]
    return len(rest) <= 2 and any(w in _FEELING_WORDS for w in rest)


def _subject(m: MessageView) -> str:
    """How a description names the speaker inside a sentence ("the user", "Caroline", "the assistant")."""
    subject = m.subject if m.is_person else "The assistant"
    return subject if subject not in ("The user", "The assistant") else subject.lower()


def _describe(
    m: MessageView, clause: str, future: bool, dated: bool = True, listener: str = "", dated_by: str = ""
) -> str:
    """The clause restated in the third person with the speaker's name (and the listener's for "you"),
    the date it points to resolved against the message time."""
    subject = m.subject if m.is_person else "The assistant"
    possessive = (
        f"{subject}'s"
        if subject[0].isupper() and subject not in ("The user", "The assistant")
        else f"{subject.lower()}'s"
    )
    sentence = restate(clause, subject if subject not in ("The user",) else "the user", possessive, listener)
    if m.is_person and subject.casefold() not in sentence.casefold():
        # "It's been tough" said by Jon is Jon's fact, not anyone's: say whose it is
        first = sentence.split(" ", 1)[0]
        if first.casefold().strip("'’") in _COMMON_OPENERS or first.endswith("ing"):
            sentence = sentence[:1].lower() + sentence[1:]
        sentence = f"{subject} says {sentence}"
    when = resolve_relative_date(dated_by or clause, m.created_at, future=future) if dated else None
    return sentence.rstrip(".!?") + (f" ({when})" if when else "") + "."


def _listener(segment: SegmentInput, m: MessageView) -> str:
    """Who "you" is in a person's message: the one other person of a conversation between two people
    (LoCoMo), the assistant in a chat with one; "" when that is not clear."""
    people = {v.subject for v in segment.messages if v.is_person} | set(segment.speakers)
    others = sorted(p for p in people if p and p != m.subject and p not in ("The user", "The assistant"))
    if len(others) == 1 and m.subject not in ("The user",):
        return others[0]
    if m.subject == "The user" and any(not v.is_person for v in segment.messages):
        return "the assistant"
    return ""


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
            hits = find_entities(m.text, m.start, m.end, speakers, elsewhere, m.is_person)
            if m.is_person:
                undertakings = projects + [(h.start, h.end) for h in hits if h.kind == "project"]
                self._statements(m, drafts, {h.name for h in hits}, _listener(segment, m), undertakings)
                if m.caption:
                    self._shared_image(m, drafts)
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
    def _statements(
        self,
        m: MessageView,
        drafts: dict[tuple[str, str], _Draft],
        names: set[str],
        listener: str,
        projects: list[tuple[int, int]],
    ) -> None:
        for s, e in sentences(m.text, m.start, m.end):
            sentence = m.text[s:e]
            first = words_of(sentence[:40])[:1]
            if (
                sentence.rstrip().endswith("?")
                and (
                    not first
                    or first[0] in _QUESTION_START
                    or first[0] in _ELLIPTIC_PAST  # "Got any paintings to show?": asked, not told
                    or "you" in words_of(sentence)[:3]
                )
            ):
                continue
            if _UNMARKED_QUESTION.match(norm_apostrophes(sentence)):
                continue  # "how do i know that a project uses sops": a query typed without "?"
            speaks_of_self = bool(SUBJECTS & set(words_of(sentence)))
            previous: _Draft | None = None
            for cs, ce, connector in clauses(m.text, s, e):
                cs, ce = clean_clause(m.text, cs, ce)
                if any(cs <= a and b <= ce for a, b in projects) and _WORKS_ON.match(
                    norm_apostrophes(m.text[cs:ce]).lower()
                ):
                    previous = None  # "I'm building a Flask app called Ledgerly": the project says it
                    continue
                draft = self._statement(m, drafts, cs, ce, connector, names, listener, speaks_of_self)
                if draft is not None and previous is not None and draft is not previous:
                    clause = m.text[cs:ce]
                    if connector in ("because", "since"):
                        draft.relations.append((previous.title, "causes", 0.5))
                    elif connector == "so":
                        rel = "enables" if re.match(r"(?:i|we) can\b", clause.lower()) else "causes"
                        previous.relations.append((draft.title, rel, 0.5))
                previous = draft

    def _statement(
        self,
        m: MessageView,
        drafts: dict[tuple[str, str], _Draft],
        cs: int,
        ce: int,
        connector: str,
        names: set[str],
        listener: str,
        speaks_of_self: bool,
    ) -> _Draft | None:
        """The fact draft of one clause, or None when the clause states no fact of anyone's (precision first:
        no subject a fact can be about, a question, courtesy, a condition, a feeling alone)."""
        clause = m.text[cs:ce]
        ws = words_of(clause)
        if (
            (len(ws) < 3 and not _SHORT_STATE.match(norm_apostrophes(clause).lower()))
            or ws[0] in {"if", "unless", "whether", "whenever"}
            or _feeling_only(ws)
            or ws[-1] in _DANGLING
            or _PHATIC.search(norm_apostrophes(clause).lower())
        ):
            return None
        first_person = any(w in FIRST_PERSON for w in ws)
        if (ws[0] in _YOU or (not first_person and _YOU & set(ws))) and not (
            {"i", "i'm", "i've", "i'd"} & set(ws)
        ):
            return None  # about or to the listener ("Have faith in yourself"): not the speaker's fact
        if connector == "and" and ws[0] not in FIRST_PERSON and _is_past(ws[0]) and speaks_of_self:
            clause = f"I {clause}"  # "... and met a designer named Sofia": the same subject goes on
        else:
            clause = _said_by_speaker(clause, ws, connector) or clause
        shown = _SHOWN.match(norm_apostrophes(clause))
        if (
            shown
            and FIRST_PERSON & set(words_of(shown.group("what")))
            and not re.match(r"(?:one|it|this|that|something|some)\b", shown.group("what"), re.I)
        ):
            # "Here's a photo of my horse painting I did recently": the speaker shared it, now
            said = f"I shared {'a photo of ' if shown.group('photo') else ''}{shown.group('what')}"
            kind, confidence = "event", 0.5
        else:
            subject = clause_subject(clause, names, speaks_of_self)
            if subject is None:
                return None  # "It made me realize ...", "These figurines I bought ...", "Seeing my kids ..."
            said = clause
            kind, confidence = classify_statement(clause, connector, subject)
        if kind is None or (ws[0] in _TEMPORAL_OPENERS and kind != "event"):
            return None  # "When I look after myself, ...": the condition of the next clause
        future = kind == "goal" or bool(
            re.search(r"\b(next|coming|tomorrow|will|'ll|going to)\b", clause.lower())
        )
        description = _describe(m, said, future, listener=listener, dated_by=clause)
        title = fact_title(description) or fact_title(
            _describe(m, said, future, dated=False, listener=listener)
        )
        return self._add(drafts, kind, title, description, confidence, m, cs, ce)

    def _shared_image(self, m: MessageView, drafts: dict[tuple[str, str], _Draft]) -> None:
        """A message that shares an image states that the speaker shared what it shows: the evidence is the
        sentence that presents it ("take a look at this", "Here's one I did last week"). With no such
        sentence there is no event: the caption is not in the text, and a sentence that does not present
        the image ("What's been the best part of it?") would be evidence of nothing it says."""
        spans = sentences(m.text, m.start, m.end)
        presenting = [
            (s, e)
            for s, e in spans
            if _PRESENTS.search(m.text[s:e]) and not m.text[s:e].rstrip().endswith("?")
        ]
        if not presenting:
            return
        s, e = clean_clause(m.text, *presenting[-1])
        shown = _IMAGE_KIND.sub("", m.caption.strip().rstrip("."))
        if e <= s or len(shown.split()) < 2:
            return
        subject = m.subject if m.subject not in ("The user",) else "the user"
        subject = f"{subject[:1].upper()}{subject[1:]}"
        description = f"{subject} shared a photo of {shown}."
        # the title names what it shows ("Caroline shared a painting of a sunset over a lake"): two photos
        # are two events, and "shared a photo of a" would make every title alike
        self._add(drafts, "event", fact_title(f"{subject} shared {shown}"), description, 0.5, m, s, e)

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
