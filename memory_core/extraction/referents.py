"""Who and what a message speaks of: the referents of a round and how a pronoun or a possessive finds one.

A `Discourse` belongs to one message being read: it knows the speaker (I/me/my/we), the listener (you: the
other person of a two-person conversation, the assistant in a chat with one) and the names and things the
round (and the round before) has mentioned, most recent first. A pronoun resolves to the most recent
compatible referent — he/she/him/her to a person other than the speaker and the listener, they/them to a
group or a plural thing, it to a named thing or a possession of the last two sentences — and to nothing when
there is none (precision first: an unresolved pronoun makes no fact). A possessed noun ("my sister", "our
cat", "Jon's band") is the owner's thing; with a name beside it ("my sister Ana") it is that name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_core.nlp.doc import ParsedDoc, Span, Token

# what a named-entity label says the thing is
NAME_KINDS = {
    "PERSON": "person",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "ORG": "organisation",
    "NORP": "group",
    "PRODUCT": "product",
    "EVENT": "event",
    "WORK_OF_ART": "work",
    "LAW": "work",
    "LANGUAGE": "language",
}
# the possessions that are things of a person's life (hubs a person recognises: "Melanie's kids",
# "Caroline's guitar"), as against "my day", "my feelings"
KIN = set(
    "sister brother mom mother mum dad father parent parents son daughter kid kids child children husband wife "
    "partner boyfriend girlfriend fiance fiancé fiancee fiancée grandma grandmother grandpa grandfather "
    "grandparents aunt uncle cousin niece nephew family fam baby twins stepmom stepdad stepson stepdaughter "
    "sibling siblings roommate boss manager coworker colleague mentor therapist teacher neighbor neighbour "
    "friend friends bestie".split()
)
PETS = set(
    "dog dogs cat cats puppy pup pups kitten kitty horse horses bird birds parrot fish hamster rabbit bunny turtle "
    "snake pet pets lizard chickens goat goats guinea pig".split()
) | {"guinea pig"}
THINGS = set(
    "car truck bike bicycle motorcycle van scooter guitar piano violin clarinet drums ukulele saxophone flute "
    "cello house home apartment flat garden yard laptop phone computer camera band team club business company "
    "shop bakery studio blog podcast channel startup book novel album painting paintings tattoo necklace ring "
    "bowl collection".split()
)
HUB_NOUNS = KIN | PETS | THINGS
PLURAL_GROUPS = {
    "kids",
    "children",
    "parents",
    "family",
    "fam",
    "friends",
    "siblings",
    "twins",
    "grandparents",
}


@dataclass(frozen=True)
class Referent:
    """Someone or something a clause can be about."""

    name: str  # how a description names it: "Caroline", "Melanie's sister", "the user"
    kind: str  # speaker | listener | person | place | organisation | product | event | work | thing | group
    hub: str = ""  # the hub concept's title it belongs to ("" when it is no hub: an unnamed user)
    plural: bool = False
    role: str = ""  # "sister", "guinea pig": what the text says it is of its owner
    owner: str = ""  # whose ("Melanie") when the text says so

    @property
    def possessive(self) -> str:
        return f"{self.name}'" if self.name.endswith("s") and self.kind == "group" else f"{self.name}'s"

    @property
    def is_person(self) -> bool:
        return self.kind in ("speaker", "listener", "person") or (self.kind == "group" and self.plural)


@dataclass
class RoundMemory:
    """What the messages of a round (and the round before) have mentioned, shared by their discourses."""

    recent: list[tuple[int, Referent]] = field(
        default_factory=list
    )  # (sentence number, referent), newest last
    sentence: int = 0


@dataclass
class Discourse:
    speaker: Referent
    listener: Referent | None = None
    speakers: tuple[str, ...] = ()  # every person's name in the conversation (LoCoMo: the two people)
    memory: RoundMemory = field(default_factory=RoundMemory)

    # ------------------------------------------------------------------------------------------ naming
    def name_referent(self, text: str, label: str) -> Referent:
        """A named thing; a speaker's name (or the short name others call them: "Mel") is that person."""
        name = canonical_name(text)
        person = self._speaker_named(name)
        if person:
            return Referent(person, "person", person)
        return Referent(name, NAME_KINDS.get(label, "thing"), name)

    def person_named(self, name: str) -> bool:
        """Whether `name` is a person of the conversation or their short name ("Mel")."""
        return bool(self._speaker_named(canonical_name(name)))

    def _speaker_named(self, name: str) -> str:
        low = name.lower()
        for s in self.speakers:
            first = s.split()[0].lower() if s else ""
            if low == s.lower() or low == first or (len(low) >= 3 and first.startswith(low)):
                return s
        return ""

    def note(self, referent: Referent) -> None:
        if referent.kind in ("speaker", "listener"):
            return
        m = self.memory
        m.recent = [(n, r) for n, r in m.recent if r.name != referent.name]
        m.recent.append((m.sentence, referent))
        del m.recent[:-24]

    # ---------------------------------------------------------------------------------------- resolving
    def resolve(self, tok: Token) -> Referent | None:
        low = tok.lower
        if low in ("me", "myself") and tok.dep in ("nsubj", "nsubjpass"):
            return None  # "me included", "me keep track of ideas": a fragment, not a statement
        if low in ("i", "me", "myself", "my", "mine"):
            return self.speaker
        if low in ("we", "us", "ourselves", "our", "ours"):
            return Referent(f"{self.speaker.name} and others", "group", self.speaker.hub, True)
        if low in ("you", "yourself", "u", "ya", "your", "yours"):
            return self.listener
        if low in ("he", "she", "him", "her", "his"):
            return self._recent(lambda r: r.kind == "person" and not r.plural)
        if low in ("they", "them", "their"):
            return self._recent(lambda r: r.plural)
        if low == "it":
            return self._recent(lambda r: r.kind not in ("person", "group") and r.hub, window=1)
        if tok.pos == "PRON" or tok.tag in ("WDT", "WP", "DT"):
            return None
        name = entity_span(tok)
        if name is not None and _initial_capital_only(tok, name):
            return None  # "Challenges will come", "Dance has the power …": a sentence's first word
        if name is not None:
            referent = self._with_role(self.name_referent(name.text, name.label), tok)
            self.note(referent)
            return referent
        if tok.pos == "PROPN":
            if tok.i == tok.sent.start and not tok.ent_type:
                return None  # "Family, which is important to me, comes first": a capital, not a name
            referent = self._with_role(self.name_referent(propn_run(tok), ""), tok)
            self.note(referent)
            return referent
        if tok.pos == "NOUN":
            referent = self.possessed(tok)
            if referent is not None:
                self.note(referent)
            return referent
        return None

    def _with_role(self, referent: Referent, tok: Token) -> Referent:
        """A name with an apposition saying what it is ("Oscar, my guinea pig"): a pet is no "she"."""
        for c in tok.children:
            if c.dep == "appos" and c.pos == "NOUN":
                kind = "animal" if c.lemma.lower() in PETS or noun_phrase(c, False) in PETS else referent.kind
                return Referent(referent.name, kind, referent.hub, role=noun_phrase(c, False))
        return referent

    def _recent(self, fits, window: int = 2) -> Referent | None:
        for n, r in reversed(self.memory.recent):
            if self.memory.sentence - n > window:
                break
            if fits(r):
                return r
        return None

    def possessed(self, noun: Token) -> Referent | None:
        """ "my sister" → the speaker's sister (or "Ana" with "my sister Ana"); "Jon's band" → Jon's."""
        owner_tok = next((c for c in noun.children if c.dep == "poss"), None)
        if owner_tok is None:
            return None
        named = next(
            (c for c in noun.children if c.dep in ("appos", "npadvmod") and c.pos == "PROPN"), None
        ) or _named_by(noun)
        owner = self.resolve(owner_tok) if owner_tok.lower != "its" else None
        if owner is None:
            return None
        role = noun_phrase(noun, with_adjectives=False)
        head = noun.lower
        if named is not None:
            kind = "person" if head in KIN else ("thing" if head in PETS else "thing")
            name = canonical_name(propn_run(named))
            return Referent(name, kind, name, role=role, owner=owner.name)
        plural = noun.tag == "NNS" or head in PLURAL_GROUPS
        hub = f"{owner.hub}'s {role}" if owner.hub and head in HUB_NOUNS else ""
        kind = "group" if plural and head in KIN else ("person" if head in KIN else "thing")
        return Referent(f"{owner.possessive} {role}", kind, hub, plural, role=role, owner=owner.name)

    # --------------------------------------------------------------------------------------- observing
    def observe_all(self, doc: ParsedDoc) -> None:
        for a, b in doc.sent_bounds:
            self.observe(doc, a, b)

    def observe(self, doc: ParsedDoc, a: int, b: int) -> None:
        """After a sentence: its names and possessed things become the most recent referents."""
        for e in doc.ents:
            if a <= e.start < b and e.label in NAME_KINDS and e.label != "NORP":
                self.note(self._with_role(self.name_referent(e.text, e.label), e.root))
        for t in doc.tokens[a:b]:
            if t.pos == "NOUN" and any(c.dep == "poss" for c in t.children):
                referent = self.possessed(t)
                if referent is not None:
                    self.note(referent)
        self.memory.sentence += 1


def _initial_capital_only(tok: Token, name: Span) -> bool:
    """A one-word entity at a sentence's start that the parser took for a thing's name only because of its
    capital (a person or a place keeps it)."""
    return len(name) == 1 and tok.i == tok.sent.start and name.label not in ("PERSON", "GPE", "LOC")


def entity_span(tok: Token) -> Span | None:
    n = tok.doc.ent_of[tok.i]
    if n < 0:
        return None
    a, b, label = tok.doc.ent_bounds[n]
    return Span(tok.doc, a, b, label) if label in NAME_KINDS else None


def propn_run(tok: Token) -> str:
    """The proper-noun run a token belongs to ("New York City"), by its compound dependents."""
    parts = [c for c in tok.subtree() if c.pos == "PROPN" and (c.i == tok.i or c.dep in ("compound", "flat"))]
    if not parts:
        return tok.text
    a, b = parts[0].idx, parts[-1].end
    return tok.doc.text[a:b]


def _named_by(noun: Token) -> Token | None:
    """ "a dog named Max", "my cat called Luna": the name given to the noun."""
    for c in noun.children:
        if c.dep == "acl" and c.lemma in ("name", "call"):
            for g in c.children:
                if g.dep in ("oprd", "attr", "dobj", "npadvmod", "appos") and g.pos == "PROPN":
                    return g
    return None


def noun_phrase(noun: Token, with_adjectives: bool = True) -> str:
    """The noun with its compounds (and adjectives): "guinea pig", "pottery class", "new car"."""
    keep = {"compound"} | ({"amod"} if with_adjectives else set())
    mods = [c for c in noun.children if c.dep in keep and c.i < noun.i]
    start = min([noun.i, *[m.i for m in mods]])
    words = [t.lower for t in noun.doc.tokens[start : noun.i + 1] if t.dep in keep or t.i == noun.i]
    return " ".join(words)


def canonical_name(text: str) -> str:
    """A name as a title: no possessive 's, no leading article, single spaces."""
    name = " ".join(text.replace("’", "'").split())
    for suffix in ("'s", "'"):
        if name.endswith(suffix) and len(name) > len(suffix) + 1:
            name = name[: -len(suffix)]
    for article in ("the ", "The ", "a ", "an "):
        if name.startswith(article) and len(name) > len(article) + 1:
            name = name[len(article) :]
    return name.strip(" .,;:!?\"'()[]")
