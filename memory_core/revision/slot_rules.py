"""The offline slot rules: which revisable attribute a first-person statement sets, deterministically.

The offline teacher calls `offline_claims` for each fact candidate it builds (the clause it quotes, the time
it was said); an LLM teacher fills the same `ClaimCandidate`s itself. A rule is a pattern over the clause
with its contractions expanded ("I'm" → "I am"): a subject (I / we / "my sister" / a name) and a predicate
whose value it captures — where someone lives, works, their title, what they drive, own and how many, how
many times they did something so far, a favourite, a preference, when they do an activity, their diet, a
partner's name, their relationship status, a planned date, where a thing of theirs is, their age. Wishes,
conditions and questions set nothing: only the auxiliaries and adverbs of a plain statement may stand
between the subject and the predicate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memory_core.ontology.claims import SPEAKER, ClaimCandidate
from memory_core.ontology.concepts import FACT_TYPES
from memory_core.revision.slot_lexicon import (
    ACTIVITIES,
    ACTIVITY,
    ADJ,
    BRANDS,
    CATEGORY_OF,
    CLOCK,
    CONTRACTIONS,
    DATE,
    DAY_PART,
    DAYS,
    DIETS,
    EVENT_NOUNS,
    FAVOURITE_STOP,
    FREQUENCY,
    FUNCTION_WORDS,
    HEAD,
    NAME,
    NEG,
    NOT_COUNTED,
    NOUNS,
    NUM,
    PARTICIPLE,
    PLACE,
    PLACE_ACTIVITY,
    ROLE_NOUNS,
    ROLES,
    TITLE,
    VALUE,
    VEHICLE,
    WHEN,
)
from memory_core.revision.slots import normalise_qualifier, number_of, singular
from memory_core.revision.valid_time import stated_valid_from

SLOT_RULES_VERSION = "slots/v2"  # v2: title-at-organisation, "hit the gym", dated "turned N"


@dataclass(frozen=True)
class _Fact:
    slot: str
    qualifier: str
    value: str
    polarity: str = "affirmed"
    dated: bool = True  # the clause's time expression (if any) says when it became true
    future: bool = False


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern
    build: Callable[[re.Match], _Fact | list[_Fact] | None]


def _rule(pattern: str, build: Callable[[re.Match], _Fact | list[_Fact] | None]) -> _Rule:
    return _Rule(re.compile(pattern, re.IGNORECASE), build)


def expand(text: str) -> str:
    """The clause with typographic apostrophes straightened and contractions expanded."""
    text = text.replace("’", "'").replace("‘", "'")
    for pattern, repl in CONTRACTIONS:
        text = re.sub(pattern, repl, text)
    return text


_TRAILING = re.compile(r"(?:\s+(?:now|these days|nowadays|again|anymore|any more|lately|so far|too))+$", re.I)


def _clean(value: str) -> str:
    value = re.sub(r"\s+", " ", value).strip(" ,.;:!?\"'()")
    return _TRAILING.sub("", value).strip(" ,.;:!?\"'()")


def _negated(m: re.Match) -> str:
    neg = m.groupdict().get("neg")
    return "negated" if neg and neg.strip() else "affirmed"


def _future(text: str) -> bool:
    return bool(
        re.search(r"\b(will|going to|gonna|moving|next|planning|plan to|about to|soon)\b", text, re.I)
    )


def _place(slot: str) -> Callable[[re.Match], _Fact | None]:
    def build(m: re.Match) -> _Fact | None:
        value = _clean(m.group("val"))
        if not value or value.lower() in {"i", "the", "my"}:
            return None
        return _Fact(slot, "", value, _negated(m), future=_future(m.group(0)))

    return build


def _count(slot: str) -> Callable[[re.Match], _Fact | None]:
    def build(m: re.Match) -> _Fact | None:
        noun = m.group("noun").lower()
        words = noun.split()
        if len(words) == 2 and words[1] in FUNCTION_WORDS:
            words = words[:1]  # "three books this month": the count is of books
        if not words or words[-1] in NOT_COUNTED or set(words) & FUNCTION_WORDS:
            return None
        noun = " ".join(words)
        n = number_of(m.group("num"))
        if n is not None and n > 1 and not noun.endswith("s"):
            return None  # "two" of a singular noun is not a count of it ("two free night's stays" ends in s)
        return _Fact(slot, singular(noun), str(n), dated=slot == "possession") if n else None

    return build


def _ordinal(m: re.Match) -> _Fact | None:
    n = number_of(m.group("ord"))
    return _Fact("possession", singular(m.group("noun").lower()), str(n)) if n else None


def _schedule(m: re.Match) -> list[_Fact] | None:
    """When an activity recurs, in its independent parts: which days, what time (a clock time or part of
    the day), how often — each its own qualifier ("gym day", "gym time", "gym frequency"), so a new time
    replaces the old time without saying anything about the days."""
    act = ACTIVITIES.get(m.group("act").lower().rstrip("s"), ACTIVITIES.get(m.group("act").lower()))
    when = _clean(m.group("when"))
    if not act or not when:
        return None
    parts = []
    time = CLOCK.findall(when) or DAY_PART.findall(when)
    if time:
        parts.append(("time", " and ".join(t.strip() for t in time)))
    days = DAYS.findall(when)
    if days:
        parts.append(("day", ", ".join(days[:-1]) + (" and " if len(days) > 1 else "") + days[-1]))
    frequency = FREQUENCY.findall(when)
    weekly = [d for d in days if d.lower().endswith("days") and d.lower() not in ("weekdays", "weekends")]
    if frequency:
        parts.append(("frequency", frequency[0]))
    elif len(weekly) > 1:  # "on Tuesdays, Thursdays and Saturdays": three times a week
        parts.append(("frequency", f"{len(weekly)} times a week"))
    return [_Fact("schedule", f"{act} {part}", value, dated=False) for part, value in parts] or None


def _favourite(m: re.Match) -> _Fact | None:
    category = normalise_qualifier(m.group("cat"))
    value = _clean(m.group("val"))
    if not category or not value or len(category.split()) > 3:
        return None
    return _Fact("favourite", category, value)


def _preference(m: re.Match) -> _Fact | None:
    value = _clean(m.group("val"))
    other = _clean(m.groupdict().get("other") or "")
    words = [w.lower() for w in (value + " " + other).split()]
    category = next((CATEGORY_OF[w] for w in words if w in CATEGORY_OF), "")
    if not value:
        return None
    if not category:
        if m.groupdict().get("switch") is not None:
            return None  # "I switched to ..." alone says nothing about which preference it is
        category = singular(value.split()[-1].lower())
    return _Fact("preference", category, value, _negated(m))


def _title(m: re.Match) -> _Fact | None:
    value = _clean(m.group("val"))
    first = value.split()[0].lower() if value else ""
    if first in {"big", "huge", "total", "real", "bit", "little", "good", "bad", "great"}:
        return None  # "a big fan", "a bit of a ..."
    return _Fact("job_title", "", value, _negated(m))


def _employer(m: re.Match) -> _Fact | None:
    """ "I'm a nurse at St Mary's": the organisation after a role is where the subject works (or studies)."""
    slot = "school" if m.group("role").lower().endswith("student") else "workplace"
    return _place(slot)(m)


def _relationship(m: re.Match) -> _Fact | None:
    name = _clean(m.group("val"))
    if name.lower() in {"i", "the", "and", "my", "is", "was"}:
        return None
    return _Fact("relationship", normalise_qualifier(m.group("role")), name, dated=False)


def _status(m: re.Match) -> _Fact | None:
    raw = m.group("val").lower()
    value = {"broke up": "single", "in a relationship": "dating", "seeing someone": "dating"}.get(raw, raw)
    return _Fact("relationship_status", "", value, _negated(m))


def _plan(m: re.Match) -> _Fact | None:
    event = normalise_qualifier(m.group("event"))
    return _Fact("plan_date", event, _clean(m.group("when")), dated=False, future=True) if event else None


def _location(m: re.Match) -> _Fact | None:
    thing = m.group("thing")
    quoted = re.search(r"[\"“']([^\"”']{2,60})[\"”']", thing)
    qualifier = quoted.group(1).lower().strip() if quoted else normalise_qualifier(thing)
    place = _clean(m.group("place"))
    if not qualifier or not place or len(qualifier.split()) > 6:
        return None
    return _Fact("location", qualifier, place)


def _age(m: re.Match) -> _Fact | None:
    n = number_of(m.group("num"))
    if not n or not 1 < n < 120:
        return None
    # "I turned 40 last month" says when; "I'm 32 this year" says nothing about a birthday
    return _Fact("age", "", str(n), dated=bool(re.search(r"\bturned\b", m.group(0), re.I)))


RULES: tuple[_Rule, ...] = (
    _rule(
        HEAD + NEG + r"(?:live|living|lives|reside|residing|am based|based|settled|moved|move|moving|"
        r"relocated|relocating)\s+(?:back\s+|down\s+|up\s+|out\s+)?(?:in|to|into)\s+(?:the\s+)?"
        + rf"(?P<val>{PLACE})",
        _place("residence"),
    ),
    _rule(
        HEAD
        + r"(?:am\s+(?:originally\s+)?from|come\s+from|grew\s+up\s+in|was\s+born\s+in|originally\s+from)\s+"
        rf"(?P<val>{PLACE})",
        _place("hometown"),
    ),
    _rule(
        HEAD + NEG + r"(?:work|working|works|started\s+working|started|joined|got\s+a\s+(?:new\s+)?job|"
        r"got\s+hired|was\s+hired|am\s+employed|employed|interning|accepted\s+an?\s+offer)\s+(?:at|for|with|by)?\s*"
        rf"(?P<val>{NAME})",
        _place("workplace"),
    ),
    _rule(
        HEAD + r"(?P<neg>)(?:left|quit|resigned\s+from|was\s+laid\s+off\s+from|got\s+laid\s+off\s+from|"
        r"stopped\s+working\s+(?:at|for))\s+(?:my\s+job\s+at\s+)?" + rf"(?P<val>{NAME})",
        lambda m: _Fact("workplace", "", _clean(m.group("val")), "negated"),
    ),
    _rule(
        HEAD
        + NEG
        + r"(?:work|working|started|started\s+working|hired|employed)\s+as\s+(?:an?\s+|the\s+)?"
        + TITLE,
        _title,
    ),
    _rule(
        HEAD + NEG + r"(?:work|working|works)\s+(?:at|for)\s+" + NAME + r"\s+as\s+(?:an?\s+|the\s+)?" + TITLE,
        _title,
    ),
    _rule(HEAD + NEG + r"(?:got\s+promoted\s+to|was\s+promoted\s+to)\s+(?:an?\s+|the\s+)?" + TITLE, _title),
    _rule(
        HEAD
        + NEG
        + r"(?:became|am|become)\s+(?:an?|the)\s+"
        + TITLE
        + r"(?=\s*(?:[,.;!?]|$|\s(?:at|for|in|with|now|and|but)\b))",
        _title,
    ),
    _rule(r"\b(?:my|our)\s+(?:new\s+)?(?:job\s+)?title\s+is\s+(?:now\s+)?(?:an?\s+)?" + TITLE, _title),
    _rule(
        HEAD + NEG + r"(?:am|became|work\s+as|working\s+as)\s+(?:an?|the)\s+"
        rf"(?P<role>(?:[\w-]+\s+){{0,3}}(?:{ROLE_NOUNS}))\s+(?:at|for|with)\s+(?P<val>{NAME})",
        _employer,
    ),
    _rule(
        HEAD
        + r"(?:study|studying|attend|attending|enrolled\s+(?:at|in)|am\s+a\s+student\s+at|go\s+to)\s+(?:at\s+)?"
        r"(?P<val>(?-i:(?:[A-Z][\w.&'-]*\s+){0,4}(?:University|College|School|Institute|Academy)(?:\s+of(?:\s+[A-Z][\w.&'-]*)+)?))",
        _place("school"),
    ),
    _rule(
        HEAD
        + NEG
        + r"(?:drive|drives|driving|ride|riding)\s+(?:an?|my|our|the)\s+(?:new\s+|used\s+|old\s+|own\s+)?"
        + VEHICLE,
        _place("vehicle"),
    ),
    _rule(
        r"\b(?:my|our)\s+(?:new\s+)?(?:car|ride|vehicle)\s+is\s+(?:now\s+)?(?:an?\s+)?" + VEHICLE,
        _place("vehicle"),
    ),
    _rule(
        HEAD
        + r"(?:bought|got|leased|purchased)\s+(?:an?|my)\s+(?:new\s+|used\s+|first\s+)?(?:car,?\s+)?(?:an?\s+)?"
        rf"(?P<val>(?:{BRANDS})(?:\s+[\w-]+){{0,2}})\b",
        _place("vehicle"),
    ),
    _rule(
        HEAD
        + r"(?P<neg>)(?:sold|traded\s+in|totaled|totalled|got\s+rid\s+of|scrapped)\s+(?:my|the|our)\s+(?:old\s+)?"
        rf"(?P<val>(?:{BRANDS})(?:\s+[\w-]+){{0,2}}|car)\b",
        lambda m: _Fact("vehicle", "", _clean(m.group("val")), "negated"),
    ),
    _rule(
        HEAD
        + r"(?:have|has|own|owns|got|keep|adopted|care\s+for)\s+(?:got\s+)?"
        + NUM
        + r"\s+"
        + ADJ
        + NOUNS,
        _count("possession"),
    ),
    _rule(
        HEAD
        + r"(?:adopted|got|bought|welcomed|rescued)\s+(?:an?|another|our|my)\s+(?P<ord>second|third|fourth|fifth|sixth)\s+"
        + ADJ
        + r"(?P<noun>[a-z][a-z'-]+)\b",
        _ordinal,
    ),
    _rule(
        r"\b(?:I|we)\s+(?:have|had)\s+(?:now\s+|already\s+|just\s+|finally\s+)?"
        + PARTICIPLE
        + r"\b[^.;!?]{0,80}?\b"
        + NUM
        + r"\s+"
        + ADJ
        + NOUNS,
        _count("count"),
    ),
    _rule(
        r"\b(?:my|our)\s+(?:new\s+|all-time\s+|current\s+|absolute\s+)?favou?rite\s+(?P<cat>[a-z][\w -]{1,30}?)\s+"
        r"(?:is|are|has\s+to\s+be|would\s+be|these\s+days\s+is|now\s+is|is\s+now)\s+(?:probably\s+|definitely\s+|still\s+)?"
        r"(?:the\s+)?(?P<val>[\w'&.-]+(?:\s+[\w'&.-]+){0,4}?)" + FAVOURITE_STOP,
        _favourite,
    ),
    _rule(
        r"\b(?P<val>(?-i:[A-Z][\w'&.-]*)(?:\s+[\w'&.-]+){0,3})\s+(?:is|are)\s+(?:now\s+|still\s+)?(?:my|our)\s+"
        r"(?:new\s+|all-time\s+)?favou?rite\s+(?P<cat>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\b",
        _favourite,
    ),
    _rule(
        HEAD
        + NEG
        + r"prefer\s+(?:to\s+(?:drink|eat|have|use)\s+)?"
        + VALUE
        + r"(?:\s+(?:over|to|rather\s+than|instead\s+of)\s+(?P<other>[\w'&.-]+(?:\s+[\w'&.-]+){0,3}))?",
        _preference,
    ),
    _rule(
        HEAD
        + r"(?P<switch>switched|changed|moved)\s+(?:over\s+)?(?:from\s+(?P<other>[\w'&.-]+(?:\s+[\w'&.-]+){0,2})\s+)?to\s+"
        + VALUE,
        _preference,
    ),
    _rule(
        HEAD
        + r"(?:(?:go|going|head|heading)\s+to|hit|hitting)\s+"  # "hit the gym": go to it
        + PLACE_ACTIVITY
        + r"\s+(?:\w+\s+){0,2}?"
        + WHEN,
        _schedule,
    ),
    _rule(
        HEAD
        + r"(?:(?:can|cannot|could)\s+(?:only\s+|usually\s+|just\s+)?)?"
        + ACTIVITY
        + r"\s+(?:\w+\s+){0,3}?"  # "work out at the gym around 6 am"
        + WHEN,
        _schedule,
    ),
    _rule(
        r"\b"
        + PLACE_ACTIVITY
        + r"(?:\s+(?:sessions?|classes?|workouts?))?,?\s+which\s+(?:is|are|I)\s+(?:\w+\s+){0,3}?"
        + WHEN,
        _schedule,
    ),
    _rule(
        r"\b" + PLACE_ACTIVITY + r"\s+(?:routine|schedule|sessions?)\b[^.;!?]{0,24}?\b"
        r"(?P<when>(?:\d+|once|twice|two|three|four|five|six|seven)\s+(?:times\s+)?(?:a|per)\s+(?:week|day|month))",
        _schedule,
    ),
    _rule(
        HEAD + NEG + r"(?:am\s+|become\s+|became\s+|went\s+|gone\s+|going\s+|turned\s+|eat\s+|eating\s+)?"
        r"(?:an?\s+|fully\s+|strictly\s+|mostly\s+|full\s+)?"
        + rf"(?P<val>{DIETS})\b(?!\s+(?:food|restaurant|recipe|option|dish|meal))",
        lambda m: _Fact("diet", "", m.group("val").lower(), _negated(m)),
    ),
    _rule(
        HEAD
        + r"(?:am\s+|are\s+)?(?:on|following)\s+an?\s+"
        + rf"(?P<val>{DIETS}|intermittent fasting)\s+diet\b",
        lambda m: _Fact("diet", "", m.group("val").lower()),
    ),
    _rule(
        r"\b(?:my|our)\s+(?:(?:older|younger|little|big|new|best)\s+)?" + rf"(?P<role>{ROLES})\b"
        r"(?:'s\s+name\s+is|,|\s+is\s+named|\s+called|)\s+(?P<val>(?-i:[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))\b",
        _relationship,
    ),
    _rule(
        r"\b(?P<val>(?-i:[A-Z][a-z]+))\s+is\s+my\s+(?:(?:older|younger|little|big|new|best)\s+)?"
        + rf"(?P<role>{ROLES})\b",
        _relationship,
    ),
    _rule(
        HEAD
        + NEG
        + r"(?:am\s+|are\s+|got\s+|getting\s+)?(?P<val>married|engaged|divorced|single|separated|widowed|"
        r"in\s+a\s+relationship|seeing\s+someone|broke\s+up)\b",
        _status,
    ),
    _rule(
        r"\b(?:my|our|the)\s+"
        + rf"(?P<event>(?:[\w'-]+\s+){{0,3}}(?:{EVENT_NOUNS}))\s+(?:is|was|has\s+been|got|will\s+be)\s+"
        r"(?:now\s+|officially\s+|finally\s+)?(?:moved|rescheduled|postponed|pushed(?:\s+back)?|changed|set|scheduled|planned|booked)?"
        r"\s*(?:to|for|on|in)?\s*" + DATE,
        _plan,
    ),
    _rule(
        HEAD
        + r"(?:am\s+|are\s+)?(?:running|doing|having|hosting|taking|attending|going\s+to|flying\s+to|leaving\s+for)\s+"
        rf"(?:the|a|an|my|our)\s+(?P<event>(?:[\w'-]+\s+){{0,3}}(?:{EVENT_NOUNS}))\s+(?:on|in|next|this)\s*"
        + DATE,
        _plan,
    ),
    _rule(
        r"\b(?:hung|hang|hanging|put|moved|placed|displayed|display|keep|kept|stored|store|mounted|leave|left)\s+"
        r"(?:up\s+)?(?:the|my|our)\s+(?P<thing>[^,.;!?]{2,60}?)\s+(?:in|on|to|into|over|above|under|below|next\s+to|"
        r"beside)\s+(?:the|my|our)\s+(?P<place>[\w -]{2,30}?)"
        r"(?=\s*(?:[,.;!?]|$|\s(?:and|but|so|because|where|to|for|now|as|since|while)\b))",
        _location,
    ),
    _rule(
        r"\b(?:the|my|our)\s+(?P<thing>[^,.;!?]{2,60}?)\s+is\s+(?:now\s+|still\s+)?(?:hanging|displayed|kept|sitting|stored|"
        r"placed|mounted)\s+(?:in|on|over|above)\s+(?:the|my|our)\s+(?P<place>[\w -]{2,30}?)"
        r"(?=\s*(?:[,.;!?]|$|\s(?:and|but|so|because|where|now)\b))",
        _location,
    ),
    _rule(
        HEAD
        + r"(?:am|turned|just\s+turned|will\s+turn|turning)\s+(?P<num>\d{1,3}|twenty|thirty|forty|fifty|sixty)"
        r"(?:\s+years?\s+old|\s+years\s+of\s+age|(?=\s*(?:[,.;!?]|$|\s(?:and|but|now|this|last|today)\b)))",
        _age,
    ),
)


def _subject(m: re.Match) -> str | None:
    """ "speaker", a name, "speaker's <role>", or None for a subject that is no one ("It", "This")."""
    raw = m.groupdict().get("subj")
    if raw is None:
        return SPEAKER
    low = raw.lower()
    if low in ("i", "we"):
        return SPEAKER
    rel = re.match(
        rf"(?:my|our) (?:(?:older|younger|little|big|new|best) )?({ROLES})\b(?:,? ([A-Z][a-z]+))?", raw, re.I
    )
    if rel:
        return rel.group(2) or f"{SPEAKER}'s {rel.group(1).lower()}"
    if low in {"it", "this", "that", "there", "here", "they", "he", "she", "you", "what", "which", "then", "now",
               "today", "yesterday", "also", "honestly", "actually", "well", "yes", "so", "and", "but"}:  # fmt: skip
        return None
    return raw


def offline_claims(
    concept_type: str, clause: str, spoken_at: datetime, is_person: bool = True
) -> list[ClaimCandidate]:
    """The claims a fact candidate's clause states, by the rules above (names and non-persons: none)."""
    if concept_type not in FACT_TYPES or not is_person:
        return []
    text = expand(clause)
    if re.match(r"\s*(?:if|unless|whether|when|what if)\b", text, re.I) or text.rstrip().endswith("?"):
        return []
    return _claims_in(text, spoken_at)


def _claims_in(text: str, spoken_at: datetime) -> list[ClaimCandidate]:
    out: dict[tuple[str, str, str], ClaimCandidate] = {}
    for rule in RULES:
        for m in rule.pattern.finditer(text):
            built = rule.build(m)
            subject = _subject(m)
            if built is None or subject is None:
                continue
            for fact in built if isinstance(built, list) else [built]:
                key = (subject.lower(), fact.slot, fact.qualifier)
                if not fact.value or key in out:
                    continue  # the first (more specific) rule wins for a slot
                when = stated_valid_from(text, spoken_at, future=fact.future) if fact.dated else None
                value = fact.value
                if fact.slot == "plan_date":
                    resolved = stated_valid_from(value, spoken_at, future=True)
                    value = resolved.isoformat() if resolved else value
                out[key] = ClaimCandidate(
                    subject=subject,
                    slot=fact.slot,
                    qualifier=fact.qualifier,
                    value=value,
                    polarity=fact.polarity,
                    valid_from=when.isoformat() if when else "",
                )
    return list(out.values())
