"""What the memory loop reads off a fact's title to tell restatements, instances and patterns apart: whose
fact it is (`fact_subject`), the content it is about (`salient_stems`), and whether it says that something
stopped (`ceases`).

- A **restatement** of a fact has the same subject and mostly the same content ("Caroline went to an LGBTQ
  conference" / "Caroline attended the LGBTQ conference"): `stem_overlap` ≥ the router's threshold.
- An **instance** of a broader goal or habit shares its subject and a content stem ("Caroline applied to
  adoption agencies" → "Caroline wants to adopt a child"): it supports the broader concept as evidence.
- A **pattern** (a behavioral pattern, a tension) is a reflective hypothesis: it stands only on episodes in
  several conversations (`PatternJudgement`), and not when a later statement of the same subject says it
  stopped ("Melanie no longer runs", "Melanie quit pottery").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_core.lexical import tokenize
from memory_core.ontology.titles import content_words

# stems that say nothing about what a fact is about: light verbs, feelings, evaluations, time
_GENERIC_STEMS = frozenset(
    tokenize(
        "have has had get got go went going make made do did done take took come came give gave want wants "
        "need needs love loves like likes feel feels felt think thinks know knows say says said tell told "
        "really great good nice amazing awesome fun time times day days week weeks year years thing things "
        "lot lots way people start started started try trying tried keep keeps kept see saw look looking "
        "new old first last next little big much many other others also always never usually often "
        "user assistant wish hope ready able share shared photo pic picture best glad happy talk talks often help helps helped show shows showed "
        "put putting sit sitting stand standing hold holding wear wearing look looks man woman person people "
        "group thing difference part way lot kind idea ideas tip tips recommendation recommendations option "
        "options suggestion suggestions advice question questions plan plans planning sure similar area "
        "information info details example"
    )
)
_CEASES = re.compile(
    r"\b(?:no longer|not any ?more|anymore|stopped|quit|quitting|gave up|give up|giving up|dropped out|"
    r"haven't [a-z]+ since|hasn't [a-z]+ since|used to|no more)\b",
    re.IGNORECASE,
)
_SUBJECT = re.compile(r"^(?:the (?:user|assistant)|[^\s']+)(?:['’]s)?", re.IGNORECASE)


def fact_subject(title: str) -> str:
    """Whose fact a title states, lower case: "caroline" for "Caroline's dream is ...", "the user" for "The
    user and others moved ..."."""
    m = _SUBJECT.match(title.strip())
    return re.sub(r"['’]s$", "", m.group().lower()) if m else ""


def salient_stems(title: str) -> frozenset[str]:
    """Stems of the content words of a title, without its subject (wherever it recurs: "Melanie made
    Melanie's own pots") and without generic words."""
    subject = set(tokenize(fact_subject(title)))
    return frozenset(
        s for s in tokenize(" ".join(content_words(title))) if s not in _GENERIC_STEMS and s not in subject
    )


_AUXILIARY = frozenset(
    "is was are were be been has have had will would can could should may might must 'd 'll 's 'm also just "
    "really still not never always usually often and others even finally now".split()
)


def topic_stems(title: str) -> frozenset[str]:
    """Salient stems a fact is *about*: its content stems without the word in its verb slot ("The user is
    planning a road trip" is about road trips, not about planning)."""
    words = re.findall(r"[\w'’-]+", title)
    i = 2 if words[:2] and words[0].lower() == "the" else 1
    if words[i : i + 2] and [w.lower() for w in words[i : i + 2]] == ["and", "others"]:
        i += 2
    while i < len(words) and words[i].lower().replace("’", "'") in _AUXILIARY:
        i += 1
    verb = set(tokenize(words[i])) if i < len(words) else set()
    return salient_stems(title) - verb


def stem_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard of two stem sets (0 when either is empty)."""
    return len(a & b) / len(a | b) if a and b else 0.0


def ceases(text: str) -> bool:
    """Does the text say something stopped ("no longer", "quit", "gave up", "used to")?"""
    return bool(_CEASES.search(text))


@dataclass
class PatternJudgement:
    """Whether a reflective candidate stands: its supporting episodes (concept ids) and their conversations,
    and a contradicting later statement if there is one."""

    episodes: list[str] = field(default_factory=list)
    conversations: set[str] = field(default_factory=set)
    contradicted_by: str = ""

    def stands(self, min_episodes: int, min_conversations: int) -> bool:
        return (
            not self.contradicted_by
            and len(self.episodes) >= min_episodes
            and len(self.conversations) >= min_conversations
        )
