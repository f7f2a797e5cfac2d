"""Reading a person's message on its parse: the clauses it states, whose they are, and how they are said.

The parse (`memory_core.nlp`) gives the structure: sentences, the clause heads (a root verb, a coordinated
or subordinate clause), each head's subject, its auxiliaries and negation, its tense from the morphology.
This module turns that structure into `Clause`s the offline teacher builds facts from:

- **the subject, resolved** (`referents.Discourse`): I/me/my → the speaker, you → the listener, he/she/they/it
  → the most recent compatible name or thing of the round or the one before, a possessed noun ("my sister")
  → the speaker's, a name → itself; a chat sentence that drops its "I" ("Got the tattoo last week") is the
  speaker's; a subject a fact cannot be about (a demonstrative, a generic plural, an unresolved pronoun) is
  no subject, and the clause no fact;
- **how it is said**: negation (a `neg` dependent, "never", "no longer", "anymore"), tense (past, present,
  perfect, future with will / going to), modality (an intention, a hypothetical, a hedge), a habit marker;
- **what is not a statement**: a question, a condition ("if …"), an imperative, courtesy to the listener.

What stays of the hand-written rules is lexical (which verbs are intentions, which adjectives feelings) and
reads the parse's lemmas, not the surface text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_core.extraction.referents import Discourse, Referent
from memory_core.extraction.text import clean_clause
from memory_core.nlp.doc import ParsedDoc, Token

CLAUSE_DEPS = {"ROOT", "conj", "advcl", "parataxis"}
SUBJECT_DEPS = {"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"}
FIRST_SINGULAR = {"i", "me", "myself", "i'm", "im"}
FIRST_PLURAL = {"we", "us", "ourselves"}
SECOND = {"you", "yourself", "yourselves", "ya", "u"}
THIRD_PERSON = {"he", "she", "him", "her", "they", "them"}
THING_PRONOUNS = {"it"}
NO_SUBJECT = {"this", "that", "these", "those", "there", "here", "which", "what", "who", "everything", "nothing",
              "something", "anything", "everyone", "someone", "anyone", "nobody", "both", "all", "each", "none",
              "one", "some", "many", "most", "few", "mine", "yours", "whatever"}  # fmt: skip
CONDITION_MARKS = {"if", "unless", "whether", "lest"}
# a subordinate clause of time, comparison or habit stays inside its head's clause ("since she was four",
# "than drive to Boston", "whenever the CSV has empty rows")
TIME_MARKS = {"since", "when", "while", "until", "till", "after", "before", "as", "once", "than", "whenever"}
WH_WORDS = {"what", "why", "how", "where", "when", "which", "who", "whom", "whose"}
HEDGES = {"maybe", "perhaps", "probably", "possibly", "might", "may", "kinda", "sorta"}
HYPOTHETICAL_AUX = {"would", "could", "might", "should", "may", "'d", "must"}
FUTURE_AUX = {"will", "'ll", "shall", "wo"}
NEGATIONS = {"not", "n't", "never", "no"}
# a dropped "I" in chat: a sentence opening on a past verb ("Got the tattoo …", "Just went hiking …"), unless
# the next word says it is an idiom or about someone else ("Made my day", "Got it", "Took me ages")
_ELLIPTIC_NEXT_NOT = {"me", "it", "you", "your", "us", "him", "her", "them", "away", "ya"}
_IDIOMS = {("make", "my", "day"), ("make", "my", "week"), ("have", "my", "doubts")}
_TO_THE_LISTENER = {"thanks", "thank", "congrats", "congratulations", "cheers"}
# past forms a tagger trained on edited text takes for something else at the start of a chat sentence
ELLIPTIC_PAST = set(
    "got went took started finished made bought visited tried joined signed moved met saw ran painted picked "
    "found adopted passed won booked watched baked cooked spent had did learned built hiked climbed attended "
    "volunteered celebrated played wrote drew opened launched quit lost fixed switched upgraded installed".split()
)
# courtesy toward the listener, not a fact about the speaker
_PHATIC = re.compile(
    r"^(?:i'?ll|i will|i'd|i would) (?:\w+ )?(?:keep you posted|check (?:it|that|them) out|let you know|add (?:it|that) to my list|"
    r"look into it|give it a (?:try|shot|go)|keep (?:that|it) in mind|think about it|remember that|take (?:a look|that)|"
    r"love to (?:see|hear|read)|be sure to)|^i'?m sure\b|^i can (?:imagine|tell|see)\b|^i (?:hope|bet) (?:you|your|it|that)\b|"
    r"^i'?m (?:so |really )?(?:glad|happy|sorry) (?:to hear|for you|you)|^i (?:totally |completely )?(?:agree|understand)\b|"
    r"^i (?:know|see) what you mean|^thanks?\b|^thank you\b|^i (?:didn't|did not|never) know (?:about|that)\b|"
    r"\bthe same way\b|^(?:me too|same here)\b|\b(?:calling|call|naming|name) it\b|"
    r"^i (?:hope|bet|wish) (?:she|he|they|you)\b|^i (?:have|gotta|got) to (?:go|run|head out|dash)\b|"
    r"^(?:since )?(?:we|you and i) (?:last )?(?:talked|chatted|spoke|caught up)\b"
)


@dataclass
class Clause:
    """One clause a person states, read on the parse."""

    doc: ParsedDoc
    head: Token
    tokens: list[Token]  # the clause's own tokens (nested clauses excluded), in text order
    start: int  # character span in the parsed text (the message piece)
    end: int
    subject: Referent | None
    subject_token: Token | None  # None when the subject is implicit (a dropped "I") or inherited
    implicit_subject: bool = False  # a dropped "I" ("Got the tattoo …")
    inherited_subject: bool = False  # the subject of the clause it is coordinated with ("… and got lost")
    connector: str = ""  # the coordinator or subordinator that opens it ("and", "because", "so", …)
    negated: bool = False
    tense: str = "present"  # past | perfect | present | progressive | future
    modality: str = ""  # "" | intention | hypothetical | hedged
    condition: bool = False
    lemmas: list[str] = field(default_factory=list)
    addressed: set[int] = field(default_factory=set)  # tokens naming a person of the conversation ("Mel")
    matters: bool = False  # a thing said to matter to the speaker ("Dancing makes me so happy")
    listener: str = ""  # the name "you" stands for in this message ("" when unclear)

    @property
    def text(self) -> str:
        return self.doc.text[self.start : self.end]

    @property
    def lower(self) -> str:
        return self.text.lower().replace("’", "'")


def is_question(doc: ParsedDoc, a: int, b: int) -> bool:
    """A sentence that asks rather than tells: a "?", or an opening wh-word or inverted auxiliary."""
    text = doc.text[doc.starts[a] : doc.starts[b - 1] + doc.lengths[b - 1]].rstrip()
    if text.endswith("?"):
        return True
    first = doc.tokens[a]
    if first.lower in WH_WORDS and b - a > 2:
        second = doc.tokens[a + 1]
        return second.pos in ("AUX", "VERB") or second.lower in ("much", "many", "long", "often", "about")
    return False


SAYING_LEMMAS = {"think", "believe", "feel", "know", "hope", "wish", "guess", "suppose", "say", "tell", "mean",
                 "realize", "realise", "love", "like", "hate", "bet", "reckon", "remember", "forget", "notice",
                 "find", "learn", "hear", "see", "show", "promise", "agree", "doubt", "imagine", "understand"}  # fmt: skip
# a comma-set-off tail of a clause: "…, which was the highlight", "…, mostly walking the dogs", "…, my
# longest run so far": commentary on the clause, not part of what it states
TAIL_DEPS = {"relcl", "acl", "appos", "advcl", "npadvmod", "parataxis", "dep"}


def clause_heads(doc: ParsedDoc, a: int, b: int) -> list[Token]:
    """The heads of the clauses of sentence [a, b): its root, and every verb heading a clause with a
    subject of its own (coordinated, subordinate, juxtaposed with a comma or a semicolon, or a complement
    the parser hung anywhere), or a coordinated verb sharing its conjunct's subject. A complement of a
    verb of saying or thinking ("I think you'd be great at it"), a relative clause and an infinitive stay
    inside their head's clause."""
    heads = []
    for t in doc.tokens[a:b]:
        if t.dep == "ROOT":
            heads.append(t)
            continue
        if t.pos not in ("VERB", "AUX") or t.dep in (
            "relcl",
            "xcomp",
            "acl",
            "pcomp",
            "aux",
            "auxpass",
            "amod",
        ):
            continue
        own_subject = _subject_token(t) is not None and _finite(t)
        if t.dep == "ccomp":
            # a clause the parser hung on the one after it ("I started a job, so I'm learning SQL") is its own
            if own_subject and (t.head.lemma.lower() not in SAYING_LEMMAS or t.i < t.head.i):
                heads.append(t)
            continue
        if t.dep == "conj" and not own_subject:
            if t.tag == "VBD" and t.head.tag == "VBD" and t.lemma != t.head.lemma and _has_object(t):
                heads.append(t)  # "I sold my Mazda last weekend and picked up a Kia": two events
            continue  # "I write raw SQL and keep it in version control": one subject, one clause
        if t.dep == "advcl" and (t.tag == "VBD" or t.lower in ELLIPTIC_PAST) and _opens_sentence(t):
            heads.append(t)  # "Got the tattoo a few years ago, it stands for freedom": a dropped "I"
            continue
        if t.dep == "advcl" and not (own_subject or any(c.dep == "mark" for c in t.children)):
            continue  # "We went camping with the kids": a participle inside its head's clause
        if t.dep == "advcl" and any(c.dep == "mark" and c.lower in TIME_MARKS for c in t.children):
            subject = _subject_token(t)
            if subject is None or subject.lower in ("she", "he", "it", "they", "there", "this", "that"):
                continue  # "she's been dancing since she was four": a time of its head's clause
            heads.append(t)  # "… after two of my teammates relocated to Lisbon": a fact of its own
            continue
        if t.dep in CLAUSE_DEPS or (own_subject and t.dep in ("dep", "ccomp")):
            heads.append(t)
    return heads


def _has_object(t: Token) -> bool:
    return any(c.dep in ("dobj", "prep", "dative", "prt") for c in t.children)


def _finite(t: Token) -> bool:
    """A verb that can head a clause of its own: tensed, or with an auxiliary ("a beagle growing up" and
    "my grocery run" are no clauses, whatever subject the parser hangs on them)."""
    return t.tag in ("VBD", "VBZ", "VBP", "MD") or any(c.dep in ("aux", "auxpass") for c in t.children)


def _opens_sentence(t: Token) -> bool:
    """Only adverbs, interjections and punctuation come before `t` in its sentence."""
    return all(x.dep in ("advmod", "intj", "punct", "discourse") for x in t.doc.tokens[t.sent.start : t.i])


def _heads_a_clause(t: Token) -> bool:
    """A coordinated verb is a clause of its own when the thing it coordinates with is a verb too."""
    return t.head.pos in ("VERB", "AUX") or any(c.dep in SUBJECT_DEPS for c in t.children)


def clause_tokens(head: Token, heads: set[int]) -> list[Token]:
    """The head's subtree without the nested clause heads' subtrees and without comma-set-off tails (a
    non-restrictive relative clause, an apposition, a trailing participle), without leading connectors,
    fillers and trailing punctuation."""
    skip: set[int] = set()
    for t in head.subtree():
        if t.i in heads and t.i != head.i:
            skip |= {x.i for x in t.subtree()}
        elif t.dep in TAIL_DEPS and t.i > head.i and _after_comma(t) and not _a_name(t):
            skip |= {x.i for x in t.subtree()}
        elif t.dep == "advcl" and t.head.i == head.i and t.i < head.i and _before_subject(t, head):
            skip |= {
                x.i for x in t.subtree()
            }  # "Since we last chatted - I joined …": the clause is what follows
    tokens = [t for t in head.subtree() if t.i not in skip]
    tokens = _contiguous(tokens, head)
    while (
        tokens
        and tokens[0].i != head.i
        and (
            tokens[0].dep in ("cc", "mark", "punct", "intj", "discourse") or tokens[0].lower in _FILLER_WORDS
        )
    ):
        tokens = tokens[1:]
    while (
        tokens
        and tokens[-1].i != head.i
        and (tokens[-1].pos in ("PUNCT", "SPACE", "SYM", "X") or tokens[-1].dep in ("cc", "mark"))
    ):
        tokens = tokens[:-1]
    return tokens


_FILLER_WORDS = {"so", "and", "but", "honestly", "actually", "anyway", "anyways", "well", "oh", "yeah", "yes",
                 "ok", "okay", "also", "plus", "then", "btw", "lol", "haha", "um", "uh", "hmm", "ugh", "wow"}  # fmt: skip


def _set_off_opener(tokens: list[Token]) -> bool:
    """A clause's first word set off by a comma: an address ("Gina, I had to …") or a sentence adverb
    ("Unfortunately, I lost …"); the comma goes with it."""
    if len(tokens) < 3:
        return False
    first, second = tokens[0], tokens[1]
    if first.text == ",":
        return True
    return second.text == "," and (first.pos == "PROPN" or (first.pos == "ADV" and first.dep == "advmod"))


def _before_subject(t: Token, head: Token) -> bool:
    subject = _subject_token(head)
    return subject is not None and max(x.i for x in t.subtree()) < subject.i


def _a_name(t: Token) -> bool:
    """ "with my roommate, Dana": an apposition that names the thing belongs to the clause."""
    return t.dep == "appos" and (t.pos == "PROPN" or t.text[:1].isupper())


def _after_comma(t: Token) -> bool:
    left = min(x.i for x in t.subtree())
    return left > 0 and t.doc.tokens[left - 1].text in (",", ";", "—", "–", "-", "(")


def _contiguous(tokens: list[Token], head: Token) -> list[Token]:
    """The run of consecutive tokens around the head (a skipped tail or nested clause in the middle cuts
    the span there: evidence is one verbatim stretch of text)."""
    if not tokens:
        return tokens
    ids = [t.i for t in tokens]
    at = ids.index(head.i)
    lo = hi = at
    while lo > 0 and ids[lo - 1] == ids[lo] - 1:
        lo -= 1
    while hi + 1 < len(ids) and ids[hi + 1] == ids[hi] + 1:
        hi += 1
    # a subject or opener before a gap ("Last weekend my book club … met") is kept when only punctuation
    # separates them
    return tokens[lo : hi + 1]


def connector_of(head: Token) -> str:
    for c in head.children:
        if c.dep in ("cc", "mark") and c.i < head.i:
            return c.lower
    if head.dep == "conj":
        for c in head.head.children:
            if c.dep == "cc" and c.i < head.i:
                return c.lower
    return ""


def _subject_token(head: Token) -> Token | None:
    """The head's subject, also where the parser hung it on an auxiliary ("My friend is getting married"); a
    verb is a subject only as a gerund ("Dancing makes me happy"), never "team" in "promoted to team lead"."""
    for t in [head, *(a for a in head.children if a.dep in ("aux", "auxpass"))]:
        for c in t.children:
            if c.dep in SUBJECT_DEPS and (c.pos not in ("VERB", "AUX") or c.tag == "VBG"):
                return c
    return None


def inherited_subject(head: Token) -> Token | None:
    """A coordinated clause without a subject shares its first conjunct's ("… and got into a bad spot")."""
    t = head
    while t.dep == "conj" and _subject_token(t) is None and t.head.i != t.i:
        t = t.head
    return _subject_token(t)


def dropped_i(head: Token, first: Token) -> bool:
    """A sentence opening on a past verb with no subject: chat drops the speaker's "I"."""
    if head.i != first.i and not _opens_sentence(head):
        return False
    if (head.tag not in ("VBD", "VBN") and head.lower not in ELLIPTIC_PAST) or head.lower in ("thanks",):
        return False
    nxt = head.doc.tokens[head.i + 1].lower if head.i + 1 < len(head.doc) else ""
    if nxt in _ELLIPTIC_NEXT_NOT:
        return False
    words = [t.lower for t in head.doc.tokens[head.i : head.i + 3]]
    if len(words) == 3 and (head.lemma, words[1], words[2]) in _IDIOMS:
        return False
    sent = head.sent
    return not any(t.lower in _TO_THE_LISTENER for t in sent.tokens)


def _definite_thing(tok: Token, discourse: Discourse) -> Referent | None:
    """A definite thing of the speaker's world in a message where they speak of themselves ("the script still
    crashes", "the rent is $2,800"): the fact is theirs to tell, said of the thing."""
    if tok.pos != "NOUN" or not any(c.dep == "det" and c.lower == "the" for c in tok.children):
        return None
    if not any(
        t.lower in ("i", "my", "me", "we", "our") for t in tok.doc.tokens[tok.sent.start : tok.sent.end]
    ):
        return None
    phrase = " ".join(t.text for t in tok.subtree() if t.i <= tok.i or t.dep == "compound")
    return Referent(phrase[:1].lower() + phrase[1:], "thing")


def tense_of(head: Token, aux: list[Token]) -> str:
    lows = {a.lower for a in aux}
    if lows & FUTURE_AUX:
        return "future"
    if head.lemma == "go" and head.tag == "VBG" and any(c.dep == "xcomp" for c in head.children):
        return "future"  # "I'm going to open a studio"
    if head.lower in ("gonna",) or "gonna" in lows:
        return "future"
    if any(a.lemma == "have" and a.tag in ("VBP", "VBZ") for a in aux) and head.tag == "VBN":
        return "perfect"
    if head.tag == "VBD" or any(a.tag == "VBD" for a in aux):
        return "past"
    if head.tag == "VBN" and (any(a.lemma == "have" for a in aux) or not aux):
        return "past"  # "I'd been to Paris", "Finished my first pottery class last night"
    if (head.tag == "VBG" and any(a.lemma == "be" for a in aux)) or any(a.tag == "VBG" for a in aux):
        return "progressive"  # "I'm flying", "she is getting married"
    return "present"


def negated(head: Token, aux: list[Token]) -> bool:
    for t in [head, *aux]:
        for c in t.children:
            if c.dep == "neg" or (c.dep == "advmod" and c.lower in ("never", "anymore")):
                return True
            if c.dep == "advmod" and c.lower == "longer" and any(x.lower == "no" for x in c.children):
                return True
    for c in head.children:  # "I don't eat meat any more"
        if (
            c.dep in ("advmod", "npadvmod")
            and c.lower == "more"
            and any(x.lower == "any" for x in c.children)
        ):
            return True
    return False


def auxiliaries(head: Token) -> list[Token]:
    return [c for c in head.children if c.dep in ("aux", "auxpass")]


def read_clauses(doc: ParsedDoc, discourse: Discourse, speaker_is_person: bool = True) -> list[Clause]:
    """The clauses of a person's message piece that state something (not questions, not courtesy), each
    with its subject resolved against `discourse` (which learns the names and things as it reads)."""
    out: list[Clause] = []
    for a, b in doc.sent_bounds:
        if b <= a:
            continue
        if is_question(doc, a, b):
            discourse.observe(doc, a, b)
            continue
        heads = clause_heads(doc, a, b)
        head_ids = {h.i for h in heads}
        first = next((t for t in doc.tokens[a:b] if t.pos not in ("PUNCT", "SPACE", "INTJ")), doc.tokens[a])
        for head in heads:
            tokens = clause_tokens(head, head_ids)
            if not tokens:
                continue
            clause = _clause(doc, head, tokens, first, discourse)
            if clause is not None:
                out.append(clause)
        discourse.observe(doc, a, b)
    return out


def _clause(
    doc: ParsedDoc, head: Token, tokens: list[Token], first: Token, discourse: Discourse
) -> Clause | None:
    if head.pos not in ("VERB", "AUX"):
        return None  # a fragment ("Especially after the accident", "The help I got from friends")
    start, end = clean_clause(doc.text, tokens[0].idx, tokens[-1].end)  # "By the way, I redeemed …"
    tokens = [t for t in tokens if t.idx >= start and t.end <= end] or tokens
    start, end = tokens[0].idx, max(end, tokens[-1].end) if end > tokens[0].idx else tokens[-1].end
    aux = auxiliaries(head)
    subject_tok = _subject_token(head)
    inherited = False
    if subject_tok is None and head.dep == "conj":
        subject_tok = inherited_subject(head)
        inherited = subject_tok is not None
    implicit = False
    if (
        subject_tok is not None
        and subject_tok.pos == "PROPN"
        and subject_tok.i + 1 < len(doc)
        and doc.tokens[subject_tok.i + 1].text == ","
        and discourse.person_named(subject_tok.text)
    ):
        subject_tok = None  # "Yep Jon, staying resilient is key": an address, not a subject
    if subject_tok is not None and subject_tok.i > head.i and subject_tok.pos != "PRON" and head.tag == "VBD":
        subject_tok = (
            None  # "Just went camping with the kids": the parser's "subject" after the verb is its object
        )
    if subject_tok is None and dropped_i(head, first):
        subject, implicit = discourse.speaker, True
    elif subject_tok is None:
        subject = None
    else:
        subject = discourse.resolve(subject_tok) or _definite_thing(subject_tok, discourse)
    connector = connector_of(head)
    lows = [t.lower for t in tokens]
    modality = ""
    if {a.lower for a in aux} & HYPOTHETICAL_AUX:
        modality = "hypothetical"
    if any(t.lower in HEDGES for t in tokens):
        modality = modality or "hedged"
    clause = Clause(
        doc=doc,
        head=head,
        tokens=tokens,
        start=start,
        end=end,
        subject=subject,
        subject_token=subject_tok,
        implicit_subject=implicit,
        inherited_subject=inherited,
        connector=connector,
        negated=negated(head, aux),
        tense="past" if implicit and head.lower in ELLIPTIC_PAST else tense_of(head, aux),
        modality=modality,
        condition=connector in CONDITION_MARKS or (lows[:1] and lows[0] in CONDITION_MARKS),
        lemmas=[t.lemma.lower() for t in tokens],
        addressed={t.i for t in tokens if t.pos == "PROPN" and discourse.person_named(t.text)},
        listener=discourse.listener.name if discourse.listener is not None else "",
    )
    if _PHATIC.search(clause.lower):
        return None
    if tokens[0].lower in WH_WORDS and tokens[0].i < head.i:
        return None  # "why I'm passionate about it": a question's complement, not a statement
    if implicit and len([t for t in tokens if t.pos not in ("PUNCT", "INTJ")]) < 2:
        return None  # "Agreed!", "Thanks!": a reply, not a fact
    return clause
