"""The offline teacher: deterministic, no network, reading people's messages on their parse
(`memory_core.nlp`). It fills the same `SegmentExtraction` an LLM would.

Per person's message (`reading`, `referents`, `facts`, `names`, `hubs`):
- **facts**: each clause with a subject a fact can be about (the speaker, a named person or thing, someone's
  possession; pronouns resolved in the round and the one before) and something it names becomes a goal /
  belief / event / behavioral_pattern / tension candidate, typed on the parse (`facts.classify`), its
  evidence the clause verbatim, its description the clause restated in the third person with who is who,
  negation and tense kept and the relative date resolved against the message time ("yesterday" → 7 May
  2023), its title the fact's short canonical handle (`fact_title`), its claims read by the slot rules;
- **hubs**: the subject of each fact is a concept of its own whose evidence is every clause about it — a
  person of the conversation ("Caroline"), a named person or thing, a possession ("Melanie's kids") — and
  each fact points to it (`about`), so a person's concept reads like a profile with its timeline; the
  themes a fact speaks of ("camping", "pottery class") are hub candidates too, kept by the memory loop only
  when they recur across conversations;
- **names**: named-entity spans and proper-noun runs, each described by what the text says it is ("Priya is
  Melanie's sister.", "Oscar is Caroline's guinea pig."), else by its kind and who named it; a name given to
  an undertaking ("a Flask app called Ledgerly") or an undertaking's own noun phrase ("writing a novel
  about lighthouses") is a project;
- **images**: a message sharing an image, with a sentence that presents it, states that the speaker shared
  a photo of what it shows;
- **reactions**: the lexicon classifier (`reactions.py`).
An assistant's messages are not parsed (long, and no one's life): their names come from the capitalisation
rules (`entities.py`), a few per message. Honest about what it is: `describe()` says teacher=offline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_core.extraction.entities import PROJECT_NOUNS, capitalised_mid_sentence, find_entities
from memory_core.extraction.facts import classify, matters_to_speaker, restate
from memory_core.extraction.hubs import possession_hub, theme_titles
from memory_core.extraction.names import NameReading, name_description, read_names
from memory_core.extraction.reactions import classify_reactions
from memory_core.extraction.reading import Clause, read_clauses
from memory_core.extraction.referents import Discourse, Referent, RoundMemory
from memory_core.extraction.teacher import MessageView, SegmentInput, Teacher, TeacherResult
from memory_core.extraction.text import clean_clause, resolve_relative_date, sentences
from memory_core.nlp import LanguageParser, NlpSpec, ParsedDoc, build_parser
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

RULES_VERSION = "offline/v6"  # v6: read on the parse (spaCy), subject and theme hubs, `about` relations
_GENERIC_DEFINITION = ", mentioned by "
HUB_CONFIDENCE = 0.6  # a theme or possession named in a fact
PROJECT_VERBS = {"build", "write", "develop", "make", "create", "design", "code", "start", "launch", "open",
                 "record", "run", "found", "host", "organize", "organise", "draft", "publish", "program"}  # fmt: skip
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


def speaker_referent(m: MessageView) -> Referent:
    """The speaker as descriptions name them: the author's name, else "the user" / "the assistant"; a named
    person is a hub."""
    subject = m.subject if m.is_person else "The assistant"
    if subject in ("The user", "The assistant"):
        return Referent(subject.lower(), "speaker", "")
    return Referent(subject, "speaker", subject)


def listener_referent(segment: SegmentInput, m: MessageView) -> Referent | None:
    """Who "you" is in a person's message: the one other person of a conversation between two people
    (LoCoMo), the assistant in a chat with one; None when that is not clear."""
    people = {v.subject for v in segment.messages if v.is_person} | set(segment.speakers)
    others = sorted(p for p in people if p and p != m.subject and p not in ("The user", "The assistant"))
    if len(others) == 1 and m.subject not in ("The user",):
        return Referent(others[0], "listener", others[0])
    if m.subject == "The user" and any(not v.is_person for v in segment.messages):
        return Referent("the assistant", "listener", "")
    return None


def _definition_rank(description: str) -> int:
    """2: says what the thing is and whose ("... is Caroline's guinea pig"); 1: what it is; 0: who named it."""
    if _GENERIC_DEFINITION not in description:
        return 2
    return 1 if " is " in description else 0


class OfflineTeacher(Teacher):
    extractor = RULES_VERSION
    uses_llm = False

    def __init__(self, parser: LanguageParser | None = None, max_assistant_entities: int = 4):
        self.parser = parser or build_parser(NlpSpec())  # no persistent cache: parses kept in memory
        self.max_assistant_entities = max_assistant_entities

    def describe(self) -> dict:
        return {"teacher": "offline", "extractor": self.extractor, **self.parser.describe()}

    def reading_figures(self) -> dict:
        stats = getattr(self.parser, "stats", None)
        return stats.as_metadata() if stats is not None else {}

    def prepare(self, segments: list[SegmentInput]) -> None:
        texts = [m.piece for s in segments for m in (*s.context, *s.messages) if m.is_person]
        texts += [
            _IMAGE_KIND.sub("", m.caption.strip().rstrip("."))
            for s in segments
            for m in s.messages
            if m.caption
        ]
        if texts:
            self.parser.parse(texts)  # one batch; `extract` finds every parse in the parser's cache

    def _doc(self, m: MessageView) -> ParsedDoc:
        return self.parser.parse([m.piece])[0]

    def extract(self, segment: SegmentInput) -> TeacherResult:
        drafts: dict[tuple[str, ...], _Draft] = {}
        reactions: list[ReactionCandidate] = []
        memory = RoundMemory()
        for m in segment.context:  # the round before: what its pronouns may point back to
            if m.is_person:
                doc = self._doc(m)
                self._discourse(segment, m, memory).observe_all(doc)
        speakers = {s.lower() for s in segment.speakers} | {
            s.split()[0].lower() for s in segment.speakers if s
        }
        elsewhere: set[str] = set()
        for m in segment.messages:
            elsewhere |= capitalised_mid_sentence(m.text, m.start, m.end)
        person_text = " ".join(m.piece for m in segment.messages if m.is_person).casefold()
        for m in segment.messages:
            if m.is_person:
                discourse = self._discourse(segment, m, memory)
                self._read_person(m, self._doc(m), discourse, drafts, elsewhere)
                if m.caption:
                    self._shared_image(m, drafts)
                reactions += _reactions(m)
            else:
                hits = find_entities(m.text, m.start, m.end, speakers, elsewhere, False)
                for hit in self._assistant_entities(m, hits, person_text):
                    who = "the assistant"
                    desc = f"{hit.name}{_GENERIC_DEFINITION}{who}."
                    if hit.role:
                        article = "an" if hit.role[:1].lower() in "aeiou" else "a"
                        desc = f"{hit.name} is {article} {hit.role}{_GENERIC_DEFINITION}{who}."
                    self._add(drafts, hit.kind, hit.name, desc, 0.45, m, hit.start, hit.end)
        concepts = [self._candidate(d) for d in drafts.values()]
        return TeacherResult(SegmentExtraction(concepts=concepts, reactions=reactions), "ok")

    @staticmethod
    def _discourse(segment: SegmentInput, m: MessageView, memory: RoundMemory) -> Discourse:
        return Discourse(speaker_referent(m), listener_referent(segment, m), segment.speakers, memory)

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

    # ------------------------------------------------------------------------------------------ a person
    def _read_person(
        self,
        m: MessageView,
        doc: ParsedDoc,
        discourse: Discourse,
        drafts: dict[tuple[str, ...], _Draft],
        elsewhere: set[str],
    ) -> None:
        offset = m.start
        who = discourse.speaker.name
        names = read_names(doc, discourse, elsewhere)
        clauses = read_clauses(doc, discourse)
        previous: _Draft | None = None
        for clause in clauses:
            draft = self._fact(m, clause, discourse, drafts, names)
            if draft is not None and previous is not None and draft is not previous:
                if clause.connector in ("because", "since", "cause", "cuz"):
                    draft.relations.append((previous.title, "causes", 0.5))
                elif clause.connector == "so":
                    rel = "enables" if re.match(r"(?:i|we) can\b", clause.lower) else "causes"
                    previous.relations.append((draft.title, rel, 0.5))
            previous = draft
        self._shown(m, doc, discourse, drafts)
        self._themes(m, doc, clauses, who, drafts)
        for name in names:
            kind = "project" if _is_project(name) else "entity"
            self._add(
                drafts,
                kind,
                name.name,
                name_description(name, who),
                0.6,
                m,
                offset + name.start,
                offset + name.end,
            )
        for a, b in self._projects(clauses, names):
            phrase = doc.text[a:b]
            title = re.sub(r"^(?:a|an|the|my|our)\s+", "", phrase, flags=re.I)
            definition = f"{title[:1].upper()}{title[1:]} is a project of {who}."
            self._add(drafts, "project", title, definition, 0.6, m, offset + a, offset + b)

    def _fact(
        self,
        m: MessageView,
        clause: Clause,
        discourse: Discourse,
        drafts: dict[tuple[str, ...], _Draft],
        names: list[NameReading],
    ) -> _Draft | None:
        """The fact draft of one clause and its hubs, or None when the clause states no fact of anyone's."""
        if matters_to_speaker(clause):
            clause.subject, clause.matters = discourse.speaker, True
        if _works_on_named_project(clause, names):
            return None  # "I'm building a Flask app called Ledgerly": the project says it
        when = resolve_relative_date(clause.text, m.created_at, future=clause.tense == "future")
        kind, confidence = classify(clause, dated=when is not None)
        if kind is None:
            return None
        if kind == "goal" and when is None:
            when = resolve_relative_date(clause.text, m.created_at, future=True)
        said = restate(clause, discourse.speaker, discourse.listener)
        if clause.matters:
            said = f"{discourse.speaker.name} finds that {said[:1].lower()}{said[1:]}"
        elif (
            clause.subject is not None
            and clause.subject.kind == "thing"
            and not clause.subject.hub
            and not clause.subject.owner
        ):
            said = f"{discourse.speaker.name} says {said[:1].lower()}{said[1:]}"  # "the script still crashes"
        description = said.rstrip(".!?") + (f" ({when})" if when else "") + "."
        title = fact_title(description) or fact_title(said)
        a, b = m.start + clause.start, m.start + clause.end
        draft = self._add(drafts, kind, title, description, confidence, m, a, b)
        subject = clause.subject
        hub = subject.hub if subject is not None else ""
        if hub:
            hub_description = (
                f"{hub} is one of the people in these conversations."
                if subject.kind in ("speaker", "group") and hub == discourse.speaker.hub
                else (
                    f"{hub}{_GENERIC_DEFINITION}{discourse.speaker.name}." if possession_hub(clause) else ""
                )
            )
            if hub_description:  # the fact's subject: a hub whose evidence is every clause about it
                self._add(drafts, "entity", hub, hub_description, confidence, m, a, b)
        return draft

    def _shown(
        self, m: MessageView, doc: ParsedDoc, discourse: Discourse, drafts: dict[tuple[str, ...], _Draft]
    ) -> None:
        """ "Here's a photo of my horse painting I did recently": a thing of the speaker's shown to the listener
        — the speaker shared it, an event told in the text itself."""
        for a, b in doc.sent_bounds:
            s, e = clean_clause(doc.text, doc.starts[a], doc.tokens[b - 1].end)
            shown = _SHOWN.match(doc.text[s:e]) if e > s else None
            if shown is None or not re.search(r"\b(?:my|our|i|we)\b", shown.group("what"), re.I):
                continue
            if re.match(r"(?:one|it|this|that|something|some)\b", shown.group("what"), re.I):
                continue
            what = re.sub(r"\b(?:my|our)\b", discourse.speaker.possessive, shown.group("what"), flags=re.I)
            what = re.sub(r"\b(?:I|we)\b", discourse.speaker.name, what).rstrip(".!")
            photo = "a photo of " if shown.group("photo") else ""
            description = f"{discourse.speaker.name} shared {photo}{what}."
            title = fact_title(f"{discourse.speaker.name} shared {what}")
            self._add(drafts, "event", title, description, 0.75, m, m.start + s, m.start + e)

    def _themes(
        self,
        m: MessageView,
        doc: ParsedDoc,
        clauses: list[Clause],
        who: str,
        drafts: dict[tuple[str, ...], _Draft],
    ) -> None:
        """Every sentence's themes (its content nouns and activities, "pottery class", "camping"), each a hub
        mention whose evidence is the clause saying it, else its sentence: a theme's evidence is every
        message about it, facts or not."""
        for a, b in doc.sent_bounds:
            for theme, tok in theme_titles(doc.tokens[a:b]):
                clause = next((c for c in clauses if c.start <= tok.idx and tok.end <= c.end), None)
                s, e = (
                    (clause.start, clause.end)
                    if clause
                    else clean_clause(doc.text, doc.starts[a], doc.tokens[b - 1].end)
                )
                if e > s:
                    self._add(drafts, "entity", theme, f"{theme}{_GENERIC_DEFINITION}{who}.", HUB_CONFIDENCE,
                              m, m.start + s, m.start + e)  # fmt: skip

    @staticmethod
    def _projects(clauses: list[Clause], names: list[NameReading]) -> list[tuple[int, int]]:
        """Undertakings the speaker works on, without a name: "writing a novel about lighthouses", "decided
        to … open a small bakery", "thinking about opening a small shop downtown"."""
        out = []
        for clause in clauses:
            if clause.subject is None or clause.subject.kind not in ("speaker", "group"):
                continue
            for verb in clause.tokens:
                if verb.pos != "VERB" or verb.lemma.lower() not in PROJECT_VERBS:
                    continue
                for obj in verb.children:
                    if obj.dep != "dobj" or obj.pos != "NOUN" or obj.lemma.lower() not in PROJECT_NOUNS:
                        continue
                    sub = [t for t in obj.subtree() if t.dep not in ("relcl", "acl", "prep") or t.i == obj.i]
                    sub += [t for t in obj.subtree() if t.dep == "advmod" and t.head.i == obj.i]
                    sub = sorted(set(sub), key=lambda t: t.i)
                    a, b = sub[0].idx, sub[-1].end
                    if any(a <= n.start < b for n in names) or any(
                        n.role and n.role.split()[-1] == obj.lower for n in names
                    ):
                        continue  # "a Flask app called Ledgerly": the name is the project
                    if len(sub) >= 2:
                        out.append((a, b))
        return out

    def _shared_image(self, m: MessageView, drafts: dict[tuple[str, ...], _Draft]) -> None:
        """A message sharing an image, with a sentence that presents it ("take a look at this", "Here's one I
        did last week"): what the image shows ("a painting of a sunset over a lake") is what that sentence
        is about — its themes ("painting", "sunset", "lake") get the sentence as evidence. No event is made of
        the image: the caption is not in the text, and "shared a person holding a necklace" citing "Take a
        look at this" is nothing a person would recognise as a memory."""
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
        who = speaker_referent(m).name
        caption = self.parser.parse([shown])[0]
        # what the image is of: the caption's head noun and the noun it is "of" ("a painting of a sunset")
        shown_tokens = [
            t for t in caption.tokens if t.dep == "ROOT" or (t.dep == "pobj" and t.head.lower == "of")
        ]
        for theme, _ in theme_titles(shown_tokens, any_role=True):
            self._add(drafts, "entity", theme, f"{theme}{_GENERIC_DEFINITION}{who}.", HUB_CONFIDENCE, m, s, e)

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
                for t, r, c in dict.fromkeys(d.relations)
                if t.casefold() != d.title.casefold()
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


def _works_on_named_project(clause: Clause, names: list[NameReading]) -> bool:
    """The speaker building, writing, calling … an undertaking (a project noun, or a name the clause gives
    as a project): the project is the concept, not a fact of its own."""
    if clause.subject is None or clause.subject.kind not in ("speaker", "group"):
        return False
    head = clause.head
    if head.lemma.lower() not in PROJECT_VERBS | {"call", "name", "work"}:
        return False
    if any(clause.start <= n.start and n.end <= clause.end and _is_project(n) for n in names):
        return True
    return head.tag == "VBG" and any(
        c.dep == "dobj" and c.lemma.lower() in PROJECT_NOUNS for c in head.children
    )  # "I'm building a CLI in Go called Tidewater", "I'm writing a fantasy novel"


def _is_project(name: NameReading) -> bool:
    head = name.role.split()[-1] if name.role else ""
    return head in PROJECT_NOUNS


def _reactions(m: MessageView) -> list[ReactionCandidate]:
    return [
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
        for r in classify_reactions(m.text, m.start, m.end)
    ]
