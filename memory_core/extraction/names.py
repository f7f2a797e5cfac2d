"""Names in a person's message, read on the parse: named-entity spans, proper-noun runs, quoted titles and
technical names, each with what the text says it is ("my sister Ana", "Oscar, my guinea pig", "a puppy
named Max", "Dana is my new manager").

Not names: greetings and interjections, weekdays and months, common acronyms, numbers, and the people of
the conversation themselves when they are addressed ("Thanks, Mel!") or speak — they are the subjects facts
are about (the teacher's subject hubs), not things mentioned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_core.extraction.entities import _CAMEL, _COMMON_ACRONYMS
from memory_core.extraction.entities import _NOT_NAMES as _NOT_NAMES_BY_CAPITALS
from memory_core.extraction.referents import NAME_KINDS, Discourse, noun_phrase
from memory_core.extraction.text import protected_ranges
from memory_core.nlp.doc import ParsedDoc, Token

_KEPT_LABELS = set(NAME_KINDS) - {"NORP", "LANGUAGE", "LAW"}
# chat openers a parser takes for names at the start of a sentence ("Glad you came!", "Sweet!")
_NOT_NAMES = _NOT_NAMES_BY_CAPITALS | {"glad", "sweet", "lovely", "sounds", "totally", "absolutely", "definitely",
                                       "aww", "awww", "omg", "wowza", "haha", "hahaha", "bravo", "kudos", "yep",
                                       "yup", "nah", "ooh", "lemme", "gimme", "gonna", "wanna", "gotta", "dunno",
                                       "kinda", "sorta", "ya", "yay", "hehe"}  # fmt: skip
_VOCATIVE_DEPS = {"npadvmod", "intj", "vocative", "dep", "appos", "nsubj", "ROOT"}


@dataclass(frozen=True)
class NameReading:
    name: str
    start: int  # character span in the parsed text
    end: int
    kind: str  # person | place | organisation | product | event | work | thing
    role: str = ""  # "sister", "guinea pig"
    owner: str = ""  # whose: the speaker's name, or another owner's


def read_names(doc: ParsedDoc, discourse: Discourse, elsewhere: set[str] = frozenset()) -> list[NameReading]:
    """The names of a person's message piece: named-entity spans united with runs of capitalised words (chat
    text gives a parser names it has never seen: "Ledgerly", "Glow Threads", "Hyundai Ioniq 5"), quoted
    titles and technical names. `elsewhere`: the words the segment shows capitalised mid-sentence (a
    capitalised word that only ever starts a sentence — "Glad", "Art" — is no name unless the parser's
    entities say it names a person or a place)."""
    found: dict[tuple[int, int], NameReading] = {}
    speakers = {s.lower() for s in discourse.speakers} | {
        s.split()[0].lower() for s in discourse.speakers if s
    }
    for a, b in protected_ranges(doc.text, 0, len(doc.text)):
        inner = doc.text[a + 1 : b - 1]
        if inner[:1].isupper() and len(inner.split()) <= 8 and not inner.rstrip().endswith((".", "!", "?")):
            found[(a + 1, b - 1)] = NameReading(inner, a + 1, b - 1, "work")
    for m in _CAMEL.finditer(doc.text):
        a, b = (m.start(1), m.end(1)) if m.group(1) else (m.start(), m.end())
        if not _inside(a, b, found):
            found[(a, b)] = NameReading(doc.text[a:b], a, b, "thing")
    for i, j in _name_spans(doc, elsewhere):
        labels = [doc.ent_bounds[doc.ent_of[k]][2] for k in range(i, j) if doc.ent_of[k] >= 0]
        kind = NAME_KINDS.get(labels[0], "thing") if labels else "thing"
        _keep(found, doc, i, j, kind, discourse, speakers)
    return sorted(found.values(), key=lambda n: n.start)


def _capitalised(t: Token) -> bool:
    return (
        t.text[:1].isupper()
        and t.lower not in ("i", "i'm", "i've", "i'll", "i'd")
        and any(c.isalpha() for c in t.text)
    )


_STARTS_A_SENTENCE = {'"', "“", "-", "*", ":", "(", "•", "—", "–"}
_INNER_CONNECTORS = {"of", "&", "de", "la", "del", "von", "van", "du", "le"}


def _name_spans(doc: ParsedDoc, elsewhere: set[str]) -> list[tuple[int, int]]:
    """Token spans of names: the parser's entities of the kinds a memory keeps, and runs of capitalised
    words (with inner connectors, "Bank of America", and a trailing model number, "Model 3"), merged; a
    span joining two names by "and" is two names ("Miso and Tofu")."""
    tokens = doc.tokens
    marks = [False] * len(doc)
    for a, b, label in doc.ent_bounds:
        if label in _KEPT_LABELS or (label in ("NORP", "LANGUAGE") and doc.pos[a] in ("PROPN", "NOUN")):
            for k in range(a, b):
                marks[k] = (
                    _capitalised(tokens[k])
                    or tokens[k].pos in ("NUM", "PROPN")
                    or tokens[k].lower in _INNER_CONNECTORS
                )
    for t in tokens:
        if not _capitalised(t) or t.pos == "PRON":
            continue
        if t.lower.strip("'") in _NOT_NAMES and not (t.i > 0 and marks[t.i - 1]):
            continue  # "Sundays" alone is no name, "Sawdust Sundays" is
        first = t.i == t.sent.start or (t.i > 0 and tokens[t.i - 1].text in _STARTS_A_SENTENCE)
        nxt = tokens[t.i + 1] if t.i + 1 < len(doc) else None
        if (
            first
            and nxt is not None
            and _capitalised(nxt)
            and nxt.lower not in _NOT_NAMES
            and t.lower not in _NOT_NAMES
        ):
            marks[t.i] = True  # "Bukka House loved it": a name of several words at a sentence's start
            continue
        if first and not marks[t.i] and t.text not in elsewhere:
            continue  # a capitalised word that only ever starts a sentence
        if (
            first
            and t.text not in elsewhere
            and not (t.pos == "PROPN" and t.ent_type in ("PERSON", "GPE", "LOC"))
        ):
            marks[t.i] = False  # "Art is my passion", "Check this out": a sentence's first word, not a name
            continue
        marks[t.i] = True
    for t in tokens[1:-1]:  # "Bank of America"
        if not marks[t.i] and t.lower in _INNER_CONNECTORS and marks[t.i - 1] and marks[t.i + 1]:
            marks[t.i] = True
    for t in tokens[1:]:  # "Model 3", "Ioniq 5"
        if not marks[t.i] and marks[t.i - 1] and t.pos == "NUM" and len(t.text) <= 3:
            marks[t.i] = True
    spans, i = [], 0
    while i < len(doc):
        if not marks[i]:
            i += 1
            continue
        j = i
        while (
            j < len(doc) and marks[j] and tokens[j].pos != "CCONJ" and tokens[j].text not in (",", "'s", "’s")
        ):
            j += 1
        if (
            j < len(doc)
            and tokens[j].text in ("'s", "’s")
            and (j + 1 >= len(doc) or tokens[j + 1].pos not in ("NOUN", "ADJ", "PROPN", "NUM"))
        ):
            j += 1  # "Trader Joe's", "St. Mary's": the name's own 's, not a genitive ("Carla's place")
        if j > i:
            spans.append((i, j))
        i = max(j, i + 1)
    return spans


def _inside(a: int, b: int, found: dict) -> bool:
    return any(x <= a and b <= y for x, y in found)


def _keep(
    found: dict, doc: ParsedDoc, i: int, j: int, kind: str, discourse: Discourse, speakers: set[str]
) -> None:
    tokens = doc.tokens[i:j]
    while tokens and (
        tokens[0].lower.strip("'") in _NOT_NAMES
        or tokens[0].pos in ("DET", "PUNCT", "ADP")
        or tokens[0].lower in ("the", "a", "an")
    ):
        tokens = tokens[1:]
    while tokens and (
        tokens[-1].pos == "PUNCT"
        or (tokens[-1].lower.strip("'") in _NOT_NAMES and len(tokens) == 1)
        or (tokens[-1].text in ("'s", "’s") and tokens[-1].tag != "POS")  # "Zuri's calling me": is, not of
    ):
        tokens = tokens[:-1]
    if not tokens:
        return
    a, b = tokens[0].idx, tokens[-1].end
    text = " ".join(doc.text[a:b].split())
    low = text.lower()
    if (
        low in _NOT_NAMES
        or low in _COMMON_ACRONYMS
        or re.fullmatch(r"[\d\s.,:/-]+", text)
        or re.fullmatch(r"[A-Z]{2,}s", text)  # a plural acronym ("APIs")
        or len(text) < 2
    ):
        return
    if low in speakers or (len(tokens) == 1 and any(s.startswith(low) and len(low) >= 3 for s in speakers)):
        return  # a person of the conversation, addressed or speaking: a subject hub, not a mention
    if _inside(a, b, found):
        return
    for key in [k for k in found if a <= k[0] and k[1] <= b]:
        del found[key]  # "macOS" inside "macOS Sonoma": the longer name
    role, owner = role_of(doc, tokens, discourse)
    found[(a, b)] = NameReading(text, a, b, kind, role, owner)


def role_of(doc: ParsedDoc, tokens: list[Token], discourse: Discourse) -> tuple[str, str]:
    """What the text says the named thing is, and whose: "my sister Ana" / "Ana, my sister" (apposition),
    "Ana is my sister" (copula), "a dog named Max" / "my cat called Luna" (naming)."""
    root = max(tokens, key=lambda t: -sum(1 for _ in t.ancestors()))
    candidates: list[Token] = []
    if root.dep == "appos":
        candidates.append(root.head)  # "my sister Ana": Ana is an apposition of sister
    candidates += [c for c in root.children if c.dep == "appos" and c.pos == "NOUN"]  # "Oscar, my guinea pig"
    if root.dep in ("nsubj",) and root.head.lemma == "be":  # "Ana is my sister"
        candidates += [c for c in root.head.children if c.dep == "attr" and c.pos == "NOUN"]
    if root.dep in ("attr",) and root.head.lemma == "be":  # "My sister is Hana"
        candidates += [c for c in root.head.children if c.dep == "nsubj" and c.pos == "NOUN"]
    if root.dep in ("oprd", "attr", "dobj", "npadvmod", "advmod", "ccomp") and root.head.lemma in (
        "name",
        "call",
    ):
        if root.head.dep == "acl":  # "a puppy named Max"
            candidates.append(root.head.head)
        elif any(c.lower == "it" for c in root.head.children):  # "We're calling it Crumb & Co"
            return "project", ""
    for noun in candidates:
        if noun.pos != "NOUN":
            continue
        owner_tok = next((c for c in noun.children if c.dep == "poss"), None)
        owner = discourse.resolve(owner_tok) if owner_tok is not None else None
        role = noun_phrase(noun, with_adjectives=False)
        if role and role not in ("name", "one", "thing", "friend's"):
            return role, (owner.name if owner is not None else "")
    return "", ""


def name_description(name: NameReading, who: str) -> str:
    """What a name is, as the text says it ("Oscar is Caroline's guinea pig."), else who named it, with its
    kind: never the sentence it occurred in, which is a fact of its own."""
    if name.role and name.owner:
        return f"{name.name} is {name.owner}'s {name.role}."
    if name.role:
        article = "an" if name.role[:1] in "aeiou" else "a"
        return f"{name.name} is {article} {name.role}, mentioned by {who}."
    kind = f" ({_KIND_NOUN[name.kind]})" if name.kind in _KIND_NOUN else ""
    return f"{name.name}{kind}, mentioned by {who}."


_KIND_NOUN = {
    "person": "a person",
    "place": "a place",
    "organisation": "an organisation",
    "product": "a product",
    "event": "an event",
    "work": "a work",
}
