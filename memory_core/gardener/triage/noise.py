"""Signals of ephemeral technical noise in a concept's title, from the title itself and the corpus's
frequency statistics (docs/architecture.md §4.10 noise_candidates).

Each signal names what it saw, so a proposal's rationale can say why. Lists are short, English and meant
for chat transcripts; a title matching one is a *candidate* for archiving, never archived by triage.
Strong signals (0.6: an interjection, a bare calendar word) make a candidate alone; medium ones (0.45: a
pronoun-led stock phrase, a formula shared by several people) only with a single weak mention.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from memory_core.concepts.names import normalise_name

INTERJECTIONS = frozenset(
    "hi hey hello yo woah whoa wow oh ah aw aww ahh omg lol haha hahaha yeah yep yup nope ok okay sure well "
    "anytime thanks thank congrats congratulations cheers bye awesome cool great nice welcome sorry hmm "
    "um uh".split()
)
CALENDAR_WORDS = frozenset(
    "mon tue tues wed thu thur thurs fri sat sun monday tuesday wednesday thursday friday saturday sunday "
    "jan feb mar apr jun jul aug sep sept oct nov dec january february march april june july august "
    "september october november december today tonight tomorrow yesterday weekend week month year "
    "morning evening afternoon night".split()
)
# a stock phrase: a short statement whose subject is a pronoun ("It's been tough", "That's so frustrating")
PRONOUN_LEADS = frozenset(
    "it it's its that that's this this's there there's these those what what's which".split()
)
TRAILING_FILLERS = frozenset("even too also though lately now then again anyway either yet".split())
STOCK_PHRASE_MAX_WORDS = 5
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})


@dataclass(frozen=True)
class NoiseSignal:
    code: str
    weight: float
    detail: str


def _words(title: str) -> list[str]:
    return title.translate(_APOSTROPHES).casefold().replace(".", " ").split()


def title_template(title: str, names: Iterable[str]) -> str:
    """The title with every participant name replaced by <P>: "John and others last talked" and
    "Tim and others last talked" share the template "<P> and others last talked"."""
    lowered = {n.casefold() for n in names}
    out = []
    for word in title.translate(_APOSTROPHES).split():
        base = word.casefold().strip(".,!?")
        base = base[:-2] if base.endswith("'s") else base
        out.append("<P>" if base in lowered else normalise_name(word))
    return " ".join(w for w in out if w)


def template_counts(titles_by_concept: dict[str, list[str]], names: Iterable[str]) -> Counter:
    """For each template holding a participant slot, how many concepts use it (title or alias)."""
    names = list(names)
    counts: Counter = Counter()
    for titles in titles_by_concept.values():
        templates = {title_template(t, names) for t in titles}
        counts.update(t for t in templates if "<P>" in t)
    return counts


def title_signals(
    title: str,
    templates_in_use: Counter,
    names: Iterable[str],
    lowercase_counts: Counter,
    midsentence_capital_counts: Counter,
    min_template_concepts: int = 3,
) -> list[NoiseSignal]:
    words = _words(title)
    if not words:
        return [NoiseSignal("empty_title", 0.7, "the title is empty")]
    out: list[NoiseSignal] = []
    first = words[0].strip("!,?'")
    if first in INTERJECTIONS:
        out.append(NoiseSignal("interjection", 0.6, f"the title starts with the interjection {first!r}"))
    if all(w.strip("!,?") in CALENDAR_WORDS for w in words):
        out.append(NoiseSignal("calendar_word", 0.6, f"the title is only a calendar word ({title!r})"))
    if first in PRONOUN_LEADS and len(words) <= STOCK_PHRASE_MAX_WORDS:
        out.append(
            NoiseSignal("stock_phrase", 0.45, f"a short stock phrase with a pronoun subject ({title!r})")
        )
    if len(words) > 1 and words[-1].strip("!,?") in TRAILING_FILLERS:
        out.append(NoiseSignal("cut_phrase", 0.4, f"the title ends in the filler word {words[-1]!r}"))
    template = title_template(title, names)
    used = templates_in_use.get(template, 0)
    if "<P>" in template and used >= min_template_concepts:
        out.append(
            NoiseSignal(
                "repeated_template",
                0.45,
                f"{used} concepts share the title pattern {template!r} (a conversational formula)",
            )
        )
    if len(words) == 1 and title[:1].isupper():
        low, capital = lowercase_counts.get(first, 0), midsentence_capital_counts.get(first, 0)
        if low >= 2 and low >= 2 * capital:
            out.append(
                NoiseSignal(
                    "common_word",
                    0.35,
                    f"{title!r} is written in lower case {low}x in the corpus and capitalised mid-sentence "
                    f"{capital}x: an ordinary word capitalised at a sentence start",
                )
            )
    return out
