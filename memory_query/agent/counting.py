"""What a count counts: the distinct items the evidence states ("How many books did I read in March?" →
Dune, The Left Hand of Darkness, Piranesi), each with the evidence that states it — not the conversations
that mention the question's words.

An item is what an answering sentence names: a quoted title, else a run of capitalised words ("The Left
Hand of Darkness"; not the author after "by", not a month, a weekday or a participant; not where the item
is — "a job offer in Lisbon at a startup called Andorinha" names one job, Andorinha — unless places are what
is counted); a sentence that answers but names nothing ("I bought another model kit") is one item of its
own when no answering sentence names one. Answering sentences are statements (not questions) holding the
counted words, inside the plan's time range, and, for a question in the first person, the user's own (an
assistant's suggestion is not a book the user read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_core.lexical import STOP_WORDS, tokenize
from memory_query.agent.findings import Evidence, sentences
from memory_query.agent.plan import Plan
from memory_query.agent.planner import GENERIC, content_tokens

# "how many conversations/sessions/times …" counts conversations, not things stated in them
COUNTS_CONVERSATIONS = re.compile(
    r"\bhow\s+many\s+(?:conversations|sessions|chats|times|discussions)\b|\bhow\s+often\b", re.I
)
_COUNTED_NOUN = re.compile(
    r"\bhow\s+many\s+(?:different\s+|distinct\s+)?(?P<noun>[a-z][a-z\- ]*?)\s+"
    r"(?:did|do|does|have|has|had|was|were|are|is|am|will|I|we|you)\b"
    r"|\bhow\s+many\s+(?:different\s+|distinct\s+)?(?P<word>[a-z][a-z\-]*)",
    re.I,
)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]|\*([^*]{2,80})\*")
# words a title keeps between its capitals ("The Left Hand of Darkness", "Klara and the Sun"); "to", "on" or
# "for" would join two names ("PostgreSQL to DuckDB")
_CONNECTOR = r"(?:of|the|and|a|an|de|la|le|von|van)"
_WORD = r"(?!I\b|I['’])[A-Z0-9][\w'’\-]*"  # "I" ends a name ("Lisbon I want …")
_NAMED = re.compile(rf"(?!I\b|I['’])[A-Z][\w'’\-]*(?:\s+(?:{_CONNECTOR}\s+)*{_WORD})*")
_NOT_ITEMS = frozenset(
    """i i'm i've i'd i'll january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow oh ok okay
    yes no so also just well great big honestly finally""".split()
)
# a name after these says where the item is ("a job offer in Lisbon"), not what it is
_LOCATIVE = re.compile(r"\b(?:in|near|around|across|outside|inside|throughout|within)\s*$", re.I)
# counted nouns whose items are places: there a locative name is the item ("cities … in Portugal" aside)
_PLACE_NOUNS = frozenset(
    """city cities country countries place places town towns state states destination destinations trip trips
    location locations neighborhood neighborhoods neighbourhood neighbourhoods island islands region regions
    park parks""".split()
)
_FIRST_PERSON = re.compile(r"\b(?:I|my|me|mine|I've|I'm)\b")


@dataclass
class CountedItem:
    name: str
    evidence: Evidence
    span: tuple[int, int]  # the sentence of the evidence that states it

    @property
    def quote(self) -> str:
        return self.evidence.text[self.span[0] : self.span[1]].strip()


def counted_noun(question: str) -> str:
    m = _COUNTED_NOUN.search(question)
    return (m.group("noun") or m.group("word")).strip().lower() if m else "items"


def _is_common(word: str) -> bool:
    stems = tokenize(word)
    return (
        word.lower() in _NOT_ITEMS
        or not stems
        or stems[0] in STOP_WORDS
        or stems[0] in GENERIC
        or bool(re.search(r"(?:ed|ing)$", word.lower()))
    )


def counts_places(noun: str) -> bool:
    return bool(_PLACE_NOUNS & set(noun.lower().split()))


def named_items(
    sentence: str,
    participants: frozenset[str] = frozenset(),
    context: frozenset[str] = frozenset(),
    places: bool = False,
) -> list[str]:
    """The things `sentence` names: quoted titles, else runs of capitalised words (see the module doc);
    none holding a `context` stem (what the question names: "for Kestrel" is not one of the items); a name
    after a locative preposition only when the sentence names nothing else or `places` are counted."""
    quoted = [a or b for a, b in _QUOTED.findall(sentence)]
    if quoted:
        return [q.strip() for q in quoted if q.strip()]
    out, where = [], []
    for m in _NAMED.finditer(sentence):
        name = re.sub(r"['’]s$", "", m.group(0)).rstrip("'’-")  # "Tomás's model": Tomás
        words = name.split()
        if not sentence[: m.start()].strip(" \"'“‘("):  # sentence-initial capitals: "Finished", "Oh", "The"
            while words and _is_common(words[0]):
                words = words[1:]
        elif len(words) == 1 and _is_common(words[0]):  # "I", "I'm" inside the sentence
            continue
        if not words or (len(words) == 1 and words[0].lower() in participants):
            continue
        if context & set(tokenize(" ".join(words))):
            continue
        if re.search(r"\bby\s*$", sentence[: m.start()]):  # the author of the title before it
            continue
        (where if _LOCATIVE.search(sentence[: m.start()]) else out).append(" ".join(words))
    return out + where if places or not out else out


def counted_items(plan: Plan, evidence: list[Evidence], threshold: float) -> list[CountedItem]:
    """The distinct items the evidence states for a count, in time order, each with its first statement."""
    wanted = set(content_tokens(plan.subs[0].text)) or set(tokenize(plan.subs[0].text))
    # what the question names ("Kestrel", "March") is context; the counted words are the rest ("databases
    # … use", "books … read"): an answering sentence holds one of those
    context = frozenset(t for w in re.findall(r"\b[A-Z][\w'’\-]*", plan.question)[1:] for t in tokenize(w))
    counted = (wanted - context) or wanted
    # of a counted noun ("model kits") its head must be held, or the question's verb ("bought"): a
    # "prediction model" is no model kit
    what = counted_noun(plan.question)
    noun = content_tokens(what)
    required = (set(noun[-1:]) | (counted - set(noun))) or counted
    places = counts_places(what)
    window = plan.time_range
    pool = [e for e in evidence if window is None or window.contains(e.created_at)]
    if _FIRST_PERSON.search(plan.question) and any(e.role == "user" for e in pool):
        pool = [e for e in pool if e.role == "user"]
    items: dict[str, CountedItem] = {}
    unnamed: dict[str, CountedItem] = {}
    for ev in sorted(pool, key=lambda e: e.created_at):
        for start, end in sentences(ev.text):
            sentence = ev.text[start:end]
            held = wanted & set(tokenize(sentence))
            if sentence.rstrip().endswith("?") or not wanted or len(held) / len(wanted) < threshold:
                continue
            if not required & held:
                continue
            names = named_items(sentence, plan.participants, context, places)
            for name in names:
                items.setdefault(name.casefold(), CountedItem(name, ev, (start, end)))
            if not names:
                statement = "'" + " ".join(sentence.split()).rstrip(".!;:").replace('"', "'") + "'"
                unnamed.setdefault(statement.casefold(), CountedItem(statement, ev, (start, end)))
    # a sentence that names nothing is an item of its own only when no answering sentence names one
    return list((items or unnamed).values())
