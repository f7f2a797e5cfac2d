"""What a clause states, read on its parse: the fact type and how sure the teacher is, and the fact restated
in the third person.

Precision first: a clause is a fact only when it has a subject a memory can keep a fact about (the speaker,
a named person or thing, a possession of someone's — `reading.Clause.subject`) and names something besides
it: "I had a great time", "I'm so happy", "It made me realize …" state nothing a question could be answered
by. The type rules, in order (`tests/test_extraction_offline.py` pins them in a table):

1. a worry or strain of the subject's own (worried, stressed, stuck, keeps failing, …) → tension;
2. a person's role or relationship ("Dana is my new manager") → belief: a standing fact;
3. a job change (start / join / quit / leave a job, a new role, promoted, hired, retired) → event;
4. an intention (want / plan / hope / decide / need to, thinking of doing, would love to, my goal is …) →
   goal; a plan fixed in time ("I'm flying to Osaka on September 22") → event: it is scheduled;
5. a problem of the subject's (errors, deadlines, something broken) → tension;
6. a habit (usually, every Friday, on Sundays, used to, lately) → behavioral_pattern;
7. a standing preference, attitude or state (love, prefer, think, my favourite, I'm vegetarian, I have two
   cats, I no longer use …) → belief;
8. something that happened (past tense or perfect) → event; an ongoing activity → event when dated, else a
   behavioral pattern; a simple-present action → behavioral pattern.

Confidence says how explicitly the text states it: the speaker's own plain statement 0.85, a named person's
0.75, a chat sentence without its "I" 0.7, a subject found through a pronoun 0.65; a hedge or a hypothetical
costs 0.15. (A single plain statement of one's own life is firm evidence; an inference is not.)
"""

from __future__ import annotations

import re

from memory_core.extraction.reactions import FEELINGS
from memory_core.extraction.reading import Clause
from memory_core.extraction.referents import Referent
from memory_core.extraction.text import third_person_verb

_STRAIN = re.compile(
    r"\b(worried|worry|worrying|nervous|anxious|stress(?:ed|ful)?|stuck|overwhelm\w*|exhausted|struggl\w+|"
    r"frustrat\w*|scared|afraid|terrified|lonely|burn(?:ed|t) out|tired of|sick of|fed up|can't sleep|insomnia|"
    r"dread\w*|torn between|concerned|upset|heartbroken|devastated|hard time|can't seem|"
    r"keeps? (?:running into|getting|having|failing|crashing|breaking|timing out)|(?:it|my \w+|the \w+|our \w+) keeps \w+ing|barely sleep|(?:don't|didn't|can't) get (?:any|enough) sleep|"
    r"not sleeping|up every night|getting used to|homesick|lonely)\b"
)
_PROBLEM = re.compile(
    r"\b(problems?|issues?|crash\w*|errors?|bugs?|broken|fail\w*|conflict\w*|haven't heard|still haven't|"
    r"took forever|can't afford|behind on|pressure|argu\w*|fight|fought|disagree\w*|doesn't work|won't work|"
    r"not working|injur\w*|hurts?|pain|deadlines?|debts?|lost my|trouble|troubles|difficult|hard to|tough|"
    r"hospital|spiked|slowed down|timeouts?|outage|leak\w*|regress\w*|aches?|aching|sore|sick|ill|illness|"
    r"infection|fever|flu|throwing up|threw up|vomit\w*|cr(?:y|ies|ying)|out[- ]of[- ]memory|takes \d+ (?:seconds|minutes|hours))\b"
)
_HABIT = re.compile(
    r"\b(usually|always|often|normally|typically|generally|regularly|every (?:day|morning|night|evening|week|"
    r"weekend|month|year|other|single|time|sunday|monday|tuesday|wednesday|thursday|friday|saturday)|"
    r"each (?:day|morning|week|month|year)|most (?:days|mornings|nights|evenings|weekends)|on (?:sundays|mondays|"
    r"tuesdays|wednesdays|thursdays|fridays|saturdays|weekends|weekdays)|daily|weekly|nightly|habit|routine|"
    r"tend to|used to|(?:once|twice|\w+ times) a (?:day|week|month|year)|days a week|lately|these days|nowadays|"
    r"all the time|whenever|\w+s a (?:day|week|month|year))\b"
)
_JOB_CHANGE = re.compile(
    r"\b(?:(?:start|started|starting|begin|began|got|get|getting|landed|accepted|took|taking|quit|quitting|left|"
    r"leaving|lost|switch\w*|chang\w*)\b[^,;.]{0,30}\b(?:new )?(?:job|role|position|internship|gig)\b|promot\w+|"
    r"(?:got|get|was|been) (?:hired|laid off|fired|let go)|retir(?:ed|ing)\b|resign\w*|joined (?:[A-Z]\w+|the company|a startup))",
    re.IGNORECASE,
)
_SCHEDULED = re.compile(
    r"\b(?:tomorrow|tonight|next (?:week|weekend|month|year|spring|summer|fall|autumn|winter|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)|this (?:weekend|coming \w+|friday|saturday|sunday|monday|"
    r"tuesday|wednesday|thursday)|on (?:the )?\d{1,2}(?:st|nd|rd|th)?\b|on (?:monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|in (?:january|february|march|april|may|june|july|august|september|october|november|december)|"
    r"in (?:\w+ )?(?:days|weeks|months)\b|(?:january|february|march|april|may|june|july|august|september|october|"
    r"november|december) \d{1,2})\b"
)
_SOMEDAY = re.compile(r"\b(?:someday|some day|one day|eventually|in the future)\b")
INTENT_LEMMAS = {"want", "plan", "hope", "intend", "aim", "decide", "need", "wish", "dream", "consider", "try",
                 "save", "apply", "prepare", "look", "wait", "mean", "hop"}  # fmt: skip
GOAL_NOUNS = {
    "goal",
    "dream",
    "plan",
    "aim",
    "hope",
    "wish",
    "intention",
    "mission",
    "ambition",
    "resolution",
}
STANCE_LEMMAS = {"love", "like", "enjoy", "prefer", "hate", "adore", "dislike", "think", "believe", "feel", "find",
                 "appreciate", "admire", "miss", "know", "rather", "doubt", "guess", "suppose", "reckon", "mind",
                 "care", "value", "respect", "trust", "fear", "regret", "wonder", "agree"}  # fmt: skip
STATE_LEMMAS = {"be", "have", "own", "live", "work", "use", "run", "keep", "rent", "host", "store", "grow",
                "come", "belong", "cost", "weigh", "speak", "study"}  # fmt: skip
LIGHT_OBJECTS = {"time", "blast", "fun", "day", "night", "week", "weekend", "moment", "chance", "look", "idea",
                 "thing", "things", "stuff", "lot", "bit", "way", "feeling", "sense", "experience", "go", "try",
                 "break", "rest", "hard", "ball"}  # fmt: skip
FEELING_WORDS = {w for group in FEELINGS for w in re.findall(r"[a-z]+", group) if len(w) > 3} - {
    "that", "this", "much", "over", "makes", "opening", "plate", "edge", "head", "sense", "moon", "thin",
    "under", "dawned", "struck", "lost", "moved", "clear", "clearer", "committed", "resolved", "burn",
} | {"frustrated", "hooked", "annoyed", "confused", "bummed", "gutted", "devastated", "heartbroken", "scared",
    "happy", "glad", "sad", "proud", "excited", "grateful", "thankful", "stoked", "thrilled", "blessed", "lucky",
    "sorry", "tired", "bored", "busy", "good", "great", "fine", "okay", "ok", "awesome", "amazing", "nice", "cool",
    "fun", "sure", "ready", "curious", "hopeful", "relieved", "pumped", "psyched", "hyped", "impressed", "touched",
}  # fmt: skip
INTENSIFIERS = {"so", "really", "very", "super", "extremely", "incredibly", "totally", "quite", "pretty", "a", "bit",
                "little", "kind", "of", "kinda", "just", "too", "right", "now", "today", "still", "always", "also",
                "truly", "definitely", "absolutely", "honestly", "feel", "feeling", "felt", "be", "being"}  # fmt: skip
IMPORTANT = {"important", "interesting", "special", "meaningful", "precious", "dear", "inspiring", "everything",
             "essential", "valuable", "crucial", "vital"}  # fmt: skip
CONTENT_POS = {"NOUN", "PROPN", "VERB", "ADJ", "NUM"}
FUNCTION_LEMMAS = {"be", "have", "do", "get", "go", "make", "feel", "seem", "look", "sound", "keep", "let",
                   "say", "tell", "know", "mean", "see", "thing", "lot", "way", "time", "something", "anything"}  # fmt: skip


def _children(clause: Clause, deps: set[str]) -> list:
    return [c for c in clause.head.children if c.dep in deps]


def _xcomp_chain(clause: Clause) -> list:
    """The head and the infinitives it governs ("want to start to write" → want, start, write)."""
    out, t = [clause.head], clause.head
    while True:
        nxt = next((c for c in t.children if c.dep in ("xcomp",) and c.pos in ("VERB", "AUX")), None)
        if nxt is None:
            return out
        out.append(nxt)
        t = nxt


def names_something(clause: Clause) -> bool:
    """Whether the clause says something beyond its subject and a feeling: a content word that is no light
    verb, intensifier or feeling ("I had a great time" names nothing; "I had a great time at the lake" does)."""
    subject_ids = {t.i for t in clause.subject_token.subtree()} if clause.subject_token is not None else set()
    content = [
        t
        for t in clause.tokens
        if t.i not in subject_ids
        and t.i not in clause.addressed
        and t.pos in CONTENT_POS
        and t.lemma.lower() not in FUNCTION_LEMMAS
        and t.lower not in INTENSIFIERS
        and t.lower not in FEELING_WORDS
        and t.lemma.lower() not in LIGHT_OBJECTS
    ]
    return bool(content)


def feeling_only(clause: Clause) -> bool:
    rest = [
        t
        for t in clause.tokens
        if t.pos not in ("PRON", "PUNCT", "AUX", "DET", "PART", "CCONJ", "SCONJ", "INTJ")
        and t.lower not in INTENSIFIERS
    ]
    # the surface word, not the lemma: "best" is lemmatised "good"
    return len(rest) <= 2 and any(t.lower in FEELING_WORDS for t in rest)


def matters_to_speaker(clause: Clause) -> bool:
    """ "Improving education is particularly interesting to me", "Dancing makes me so happy": a thing said to
    matter to the speaker — the speaker's belief."""
    head = clause.head
    subject = clause.subject_token
    if subject is None or subject.pos == "PRON":
        return False
    if head.lemma == "make" and any(c.dep in ("dobj", "nsubj") and c.lower == "me" for c in head.subtree()):
        return True
    if head.lemma == "be" and subject.pos == "NOUN":  # "Art is my passion"
        attr = next((c for c in head.children if c.dep == "attr"), None)
        if attr is not None and any(c.dep == "poss" and c.lower == "my" for c in attr.children):
            return True
    if head.lemma == "be":
        comp = next((c for c in head.children if c.dep == "acomp" and c.lower in IMPORTANT), None)
        if comp is not None:
            return any(t.lower == "me" and t.head.lower in ("to", "for") for t in head.subtree())
    return False


def classify(clause: Clause, dated: bool) -> tuple[str | None, float]:
    """(fact type or None, teacher confidence) of a clause whose subject is resolved."""
    subject: Referent | None = clause.subject
    if subject is None or clause.condition or subject.kind == "listener":
        return None, 0.0
    if subject.owner and subject.owner == clause.listener and clause.tense in ("future", "present"):
        return None, 0.0  # "Your studio is gonna make a huge difference": encouragement, not a fact
    rather = any(t.lower == "rather" for t in clause.tokens)
    if (
        clause.modality == "hypothetical"
        and clause.head.lemma not in ("love", "like", "prefer")
        and not rather
    ):
        return None, 0.0  # "I would have gone", "I could try": no fact (but "I'd love to …" is an intention)
    if clause.matters:
        return "belief", _confidence(clause)  # "Dancing makes me so happy": what matters to the speaker
    if feeling_only(clause) or not names_something(clause):
        return None, 0.0
    if clause.head.lemma == "wish" and _counterfactual(clause):
        return None, 0.0  # "I wish I had known you back then": no fact, no goal
    low = clause.lower
    lemmas = {t.lemma.lower() for t in _xcomp_chain(clause)}
    base = _confidence(clause)
    if _STRAIN.search(low):
        return "tension", base
    if _is_role(clause):
        return "belief", base
    if clause.head.lemma.lower() in INTENT_LEMMAS and _intends(clause, lemmas):
        return "goal", base  # "I've decided to quit my job and open a bakery next spring"
    if _JOB_CHANGE.search(clause.text):
        return "event", base
    if (
        _intends(clause, lemmas)
        or _SOMEDAY.search(low)
        or re.match(r"(?:i |we )?(?:gotta|got ta|got to)\b", low)
    ):
        return "goal", base  # "Gotta check the floor quality": what the speaker has to do
    if (
        clause.tense in ("future", "progressive", "present")
        and _SCHEDULED.search(low)
        and not _HABIT.search(low)
    ):
        return "event", base  # "I'm flying to Osaka on September 22", "I leave on June 1": scheduled
    if clause.tense == "future":
        return "goal", base
    if _PROBLEM.search(low) and clause.tense in ("present", "perfect", "progressive"):
        return "tension", base
    stance = clause.head.lemma.lower() in STANCE_LEMMAS
    if (
        stance
        and clause.tense == "past"
        and clause.head.lemma.lower() not in ("think", "believe", "know", "feel")
    ):
        return "event", base  # "Bukka House loved it and ordered six matching chairs"
    if stance or rather or "favourite" in low or "favorite" in low:
        return "belief", base
    if clause.head.tag == "VBN" and any(
        a.lemma == "be" for a in clause.head.children if a.dep in ("aux", "auxpass")
    ):
        if clause.tense in ("present",):
            return "belief", base  # "she's obsessed with dinosaurs right now": a state
    if _HABIT.search(low) and clause.tense != "future":
        return "behavioral_pattern", base
    if clause.negated and (
        clause.tense == "present" or re.search(r"\b(?:anymore|any more|no longer)\b", low)
    ):
        return "belief", base  # "I no longer use Docker", "I'm not doing the keto diet anymore"
    if clause.tense in ("past", "perfect"):
        return "event", base
    if clause.tense == "progressive":
        return ("event", base) if dated else ("behavioral_pattern", base)
    if clause.head.lemma.lower() in STATE_LEMMAS:
        return "belief", base
    return "behavioral_pattern", base


def _confidence(clause: Clause) -> float:
    kind = clause.subject.kind if clause.subject else ""
    token = clause.subject_token
    if clause.implicit_subject:
        base = 0.7
    elif token is not None and token.lower in ("he", "she", "him", "her", "they", "them", "it"):
        base = 0.65
    elif kind in ("speaker",) or (kind == "group" and token is not None and token.lower in ("we", "us")):
        base = 0.85
    else:
        base = 0.75
    if clause.modality in ("hedged",) or (clause.modality == "hypothetical" and clause.head.lemma != "love"):
        base -= 0.15
    return round(base, 2)


def _is_role(clause: Clause) -> bool:
    """ "Dana is my new manager", "My sister is Hana": a person's role."""
    head = clause.head
    if head.lemma != "be":
        return False
    attr = next((c for c in head.children if c.dep == "attr"), None)
    subject = clause.subject_token
    if attr is None or subject is None:
        return False
    possessed = lambda t: any(c.dep == "poss" for c in t.children)  # noqa: E731
    return (subject.pos == "PROPN" and possessed(attr)) or (attr.pos == "PROPN" and possessed(subject))


def _intends(clause: Clause, lemmas: set[str]) -> bool:
    head = clause.head
    if lemmas & INTENT_LEMMAS and len(lemmas) > 1 and not clause.negated:
        return head.lemma not in ("look",) or any(c.lower in ("forward", "to") for c in head.children)
    if head.lemma in ("want", "need", "plan", "hope", "dream", "wish") and not clause.negated:
        return not (head.lemma == "wish" and head.tag == "VBP" and _counterfactual(clause))
    if head.lemma == "think" and head.tag == "VBG":  # "I'm thinking of adopting"
        return any(c.dep == "prep" and c.lower in ("of", "about") for c in head.children)
    if head.lemma == "be":  # "My goal is to give kids a loving home"
        subject = clause.subject_token
        return subject is not None and subject.lemma.lower() in GOAL_NOUNS
    if head.lemma in ("love", "like") and clause.modality == "hypothetical":
        return any(c.dep == "xcomp" for c in head.children)  # "I'd love to make one"
    if head.lemma == "wait" and clause.negated:
        return True  # "I can't wait to …"
    if head.lemma == "have" and any(c.dep == "xcomp" and c.pos == "VERB" for c in head.children):
        return True  # "I have to find a pediatrician"
    return False


def _counterfactual(clause: Clause) -> bool:
    return bool(re.search(r"\bwish (?:i|we) (?:had|was|were|knew|could have|'d)\b", clause.lower))


# ----------------------------------------------------------------------------------------- restating
_CONTRACTED = {"'re": "are", "'ve": "have", "'ll": "will", "'d": "would", "'s": "is", "'m": "am"}


def _replaced_pronouns(clause: Clause) -> set[int]:
    """The subject pronoun a restatement replaces by a name (he/she/they/it/we)."""
    token = clause.subject_token
    if token is None or token.lower not in ("he", "she", "they", "it", "we"):
        return set()
    return {token.i}


_FIRST = {"i": "S", "me": "S", "myself": "R", "my": "P", "mine": "P", "we": "G", "us": "G", "ourselves": "G",
          "our": "P", "ours": "P"}  # fmt: skip
_SECOND = {"you": "L", "yourself": "L", "your": "LP", "yours": "LP", "u": "L", "ya": "L"}
_FINITE_FIRST = {"am": "is", "'m": "is", "m": "is", "have": "has", "'ve": "has", "do": "does", "was": "was",
                 "wan": "wants", "gon": "is going"}  # fmt: skip


def restate(clause: Clause, speaker: Referent, listener: Referent | None) -> str:
    """The clause in the third person with who is who: the speaker's name for I/me/my, the listener's for
    you, a resolved pronoun's referent for he/she/they/it, the verb agreeing ("I'm nervous about my race" →
    "Nadia is nervous about Nadia's race"); negation and tense as they were."""
    parts: list[str] = []
    tokens = clause.tokens
    agree = _agreeing_verbs(clause)
    doc = clause.doc
    for n, t in enumerate(tokens):
        word = _replacement(t, clause, speaker, listener, agree)
        gap = (
            doc.text[t.end : tokens[n + 1].idx] if n + 1 < len(tokens) and tokens[n + 1].i == t.i + 1 else " "
        )
        if word != t.text and t.text[:1] in ("'", "’") and parts and not parts[-1].endswith(" "):
            parts.append(" ")
        parts.append(word + gap)
    out = "".join(parts)
    if clause.implicit_subject:
        out = f"{speaker.name} {out[:1].lower()}{out[1:]}"
    elif clause.inherited_subject and clause.subject is not None:
        out = f"{clause.subject.name} {out[:1].lower()}{out[1:]}"
    out = re.sub(r"\s+", " ", out).strip()
    return out[:1].upper() + out[1:] if out else out


def _agreeing_verbs(clause: Clause) -> set[int]:
    """The finite verbs a subject "I" agrees with, in every clause the evidence holds ("I'm keen on it -
    I'd love to …"): the first auxiliary before its verb, else the verb itself when it is present tense."""
    out = set()
    for t in clause.tokens:
        if t.lower not in ("i", "im") or t.dep not in ("nsubj", "nsubjpass"):
            continue
        verb = t.head
        aux = [c for c in verb.children if c.dep in ("aux", "auxpass") and c.i < verb.i and c.i > t.i]
        if aux:
            out.add(aux[0].i)
        elif verb.tag == "VBP" or verb.lower in ("am", "'m"):
            out.add(verb.i)
    return out


def _replacement(t, clause: Clause, speaker: Referent, listener: Referent | None, agree: set[int]) -> str:
    low = t.lower
    if t.i in agree:
        if low in _FINITE_FIRST:
            return _FINITE_FIRST[low]
        if low == "'d":
            return "had" if t.tag == "VBD" or t.head.tag == "VBN" else "would"  # "I'd been" / "I'd like"
        if low == "'ll":
            return "will"
        if t.tag == "VBP":
            return third_person_verb(t.text)
        return t.text
    if low in _FIRST:
        form = _FIRST[low]
        if form == "S":
            return speaker.name
        if form == "P":
            return speaker.possessive
        if form == "R":
            return "themself"  # "I learned to accept myself" → "Caroline learned to accept themself"
        return f"{speaker.name} and others"
    if low in _SECOND and listener is not None:
        return listener.possessive if _SECOND[low] == "LP" else listener.name
    if low == "na" and t.i > 0 and t.doc.tokens[t.i - 1].lower in ("gon", "wan"):
        return " to"  # "gonna" → "going to", "wanna" → "want to"
    if low == "ta" and t.i > 0 and t.doc.tokens[t.i - 1].lower == "got":
        return " to"  # "gotta" → "got to"
    if low in ("gon", "wan") and t.i + 1 < len(t.doc) and t.doc.tokens[t.i + 1].lower == "na":
        return "going" if low == "gon" else "want"
    if low in _CONTRACTED and t.i > 0 and t.doc.tokens[t.i - 1].i in _replaced_pronouns(clause):
        return " " + _CONTRACTED[low]  # "they're" → "Gina's customers are"
    token = clause.subject_token
    if (
        token is not None
        and t.i == token.i
        and low in ("he", "she", "they", "it")
        and clause.subject is not None
    ):
        return clause.subject.name
    return t.text
