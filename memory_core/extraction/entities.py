"""Named entities and project phrases, found by rules over capitalisation, quotes and cue verbs.

Precision first: a capitalised word that merely starts a sentence is kept only when the segment also shows
it capitalised mid-sentence; greetings, weekdays, months, pronouns, common acronyms and the speakers' own
names are never entities (the speakers are who facts are *about*, they are attached through descriptions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_core.extraction.text import Span, protected_ranges, sentences
from memory_core.ontology.titles import MONTHS, WEEKDAYS

_TOKEN = re.compile(r"[^\W_][\w'’\-]*|&")
_NOT_NAMES = {
    "i", "i'm", "i've", "i'll", "i'd", "im", "hey", "hi", "hello", "thanks", "thank", "wow", "oh", "ugh", "yes", "no",
    "yeah", "yep", "nope", "ok", "okay", "sure", "congrats", "congratulations", "nice", "great", "cool", "awesome",
    "haha", "lol", "omg", "please", "sorry", "dear", "mr", "mrs", "ms", "dr", "happy", "merry", "good", "well", "so",
    "btw", "user", "assistant", "aw", "aww", "ah", "hmm", "um", "uh", "bye", "cheers", "love", "xoxo", "ps", "here",
    "there", "this", "that", "these", "those", "what", "why", "how", "when", "where", "who", "which", "step", "note",
    "tip", "tips", "example", "answer", "question", "option", "yours", "mine", "god", "lord", "sir", "madam",
    *MONTHS, *WEEKDAYS, *(d + "s" for d in WEEKDAYS), "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "today", "tomorrow", "yesterday", "tonight", "christmas", "easter", "halloween",
    "woohoo", "woo", "wohoo", "yay", "yippee", "hooray", "hurray", "whoa", "ooh", "gosh", "geez", "phew", "oops", "yo",
    "yess", "alright",
}  # fmt: skip
_COMMON_ACRONYMS = {
    "api", "csv", "url", "pdf", "html", "css", "json", "sql", "ai", "ml", "tv", "faq", "diy", "asap", "fyi", "btw",
    "lol", "omg", "imo", "imho", "tbh", "ceo", "usb", "gpu", "cpu", "ram", "pc", "ui", "ux", "id", "ide", "cli", "sdk",
    "http", "https", "cors", "am", "pm", "ok", "etc", "vs", "eg", "ie", "aka", "fwiw", "idk", "np", "thx", "pls",
    "cto", "cfo", "coo", "vp", "hr", "qa", "pr", "tb", "gb", "mb", "kb", "ms", "km", "kg", "lb", "mph", "usd", "eur",
}  # fmt: skip
_STARTERS = {
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "it", "it's", "we", "you", "they", "he",
    "she", "and", "but", "or", "so", "if", "then", "also", "just", "maybe", "last", "next", "every", "each",
    "some", "any", "all", "both", "one", "two", "first", "after", "before", "since", "because", "while", "although",
    "though", "as", "at", "in", "on", "for", "from", "to", "with", "by", "about", "of", "do", "does", "did", "can",
    "could", "would", "should", "will", "is", "are", "was", "were", "be", "have", "has", "had", "not", "let", "let's",
    "go", "get", "make", "take", "try", "keep", "start", "use", "check", "consider", "look", "find", "see", "think",
    "remember", "don't", "i'd", "you're", "you'll", "you've", "that's", "there's", "here's", "what's", "how's",
    "poor", "honestly", "actually", "anyway", "plus", "speaking", "sounds", "glad", "love", "hope", "agreed",
    "absolutely", "definitely", "totally", "exactly", "interesting", "amazing", "true", "same", "yay", "whoa",
    "tell", "say", "give", "ask", "send", "call", "meet", "thank", "wish", "come", "bring", "show", "enjoy",
}  # fmt: skip
_CONNECTORS = {"of", "the", "de", "&", "for", "du", "la", "le", "van", "von", "da", "del"}
PROJECT_NOUNS = {
    "app", "application", "website", "site", "webapp", "blog", "vlog", "podcast", "channel", "newsletter", "novel",
    "book", "memoir", "thesis", "dissertation", "startup", "start-up", "company", "business", "bakery", "shop",
    "store", "cafe", "café", "restaurant", "project", "game", "library", "tool", "script", "bot", "plugin",
    "extension", "campaign", "garden", "band", "album", "film", "movie", "documentary", "series", "portfolio",
    "platform", "product", "service", "studio", "nonprofit", "charity", "fundraiser", "calendar", "database",
    "dashboard", "pipeline", "framework", "robot", "renovation", "remodel", "quilt", "mural", "zine", "comic",
    "webcomic", "hustle", "ep", "lp", "mixtape", "demo", "course", "curriculum", "workshop", "brand", "line", "collection", "clinic", "practice",
    "cli",
}  # fmt: skip
_CALLED = re.compile(r"\b(?:called|named|titled)\s*[:\"'“]?\s*$", re.IGNORECASE)
_NAMING_IT = re.compile(
    r"\b(?:calling it|call it|name it|naming it|called it|named it)\s*[:\"'“]?\s*$", re.IGNORECASE
)
_CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]+\b|`([^`\s]{2,40})`|\b[a-z][a-z0-9]+(?:_[a-z0-9]+){2,}\b")
# "Sofia is my new mentor": a sentence-initial word said to be someone's something is a name
_ROLE_COPULA = re.compile(r"^\s+(?:is|was|'s|’s)\s+(my|our)\s+((?:[a-z][a-z\-]*\s+){0,2}[a-z][a-z\-]*)")
_TITLE_ABBREVIATIONS = {"St", "Dr", "Mt", "Mr", "Mrs", "Ms", "Ft"}  # "St. Mary's" is one name
_ROLE_BEFORE = re.compile(r"\b([Mm]y|[Oo]ur)\s+((?:[a-z][a-z\-]*\s+){0,2}[a-z][a-z\-]*),?\s*$")
# "Oscar, my guinea pig." / "Luna, our cat, ...": an apposition after the name
_ROLE_AFTER = re.compile(
    r"^,\s+([Mm]y|[Oo]ur)\s+((?:[a-z][a-z\-]*\s+){0,2}[a-z][a-z\-]*)(?=\s*(?:[.,;:!?)]|$|\s(?:and|who|which|that)\b))"
)
# "another cat named Bailey", "my dog called Max", "a Flask app called Ledgerly": the noun says what it is
_ROLE_NAMED = re.compile(
    r"\b(my|our|a|an|the|another|new|his|her|their)\s+((?:[A-Za-z][\w\-]*\s+){0,2}[a-z][\w\-]*)\s+"
    r"(?:named|called|titled)\s*[:\"'“]?\s*$",
    re.IGNORECASE,
)
_NOT_ROLES = {"name", "favorite", "favourite", "friend's", "thing", "one", "something"}
# a role is a short noun phrase: "trip to the" (from "my trip to the UK") is not one
_ROLE_FUNCTION_WORDS = {"to", "the", "a", "an", "of", "in", "on", "at", "for", "with", "from", "by", "and", "or",
                        "is", "was", "are", "were", "this", "that", "about", "into", "over", "up"}  # fmt: skip


@dataclass(frozen=True)
class EntityHit:
    name: str
    start: int
    end: int
    kind: str  # entity | project
    role: (
        str  # "sister", "guinea pig", "cat": "my sister Priya", "Oscar, my guinea pig", "a cat named Bailey"
    )
    role_owner: str  # "my" | "our" | ""


def _markup_ranges(text: str, start: int, end: int) -> list[Span]:
    """Bold runs and heading lines: an assistant's structure, not things the conversation is about."""
    ranges = [(m.start(), m.end()) for m in re.finditer(r"\*\*[^*\n]{1,120}\*\*", text[:end])]
    ranges += [(m.start(), m.end()) for m in re.finditer(r"(?m)^\s*#{1,6} .*$", text[:end])]
    ranges += [(m.start(), m.end()) for m in re.finditer(r"```.*?(?:```|\Z)", text[:end], re.S)]  # code
    return [(a, b) for a, b in ranges if b > start]


_CLAUSE_OPENER = re.compile(r"(?:[:;(]|\*\*|\s[-–—]|^\s*(?:\d+[.)]|[-*•]))\s*$")


def _opens_clause(text: str, pos: int, sentence_start: int) -> bool:
    """A word right after "1.", "-", ":", "**" or "(" starts a clause like a sentence does ("Step 2: Create ...")."""
    return pos == sentence_start or bool(_CLAUSE_OPENER.search(text[max(sentence_start, pos - 8) : pos]))


def _inside(a: int, b: int, ranges: list[Span]) -> bool:
    return any(x <= a and b <= y for x, y in ranges)


def _capitalised(tok: str) -> bool:
    """ "Kyoto", "N4", "macOS", "iPhone": an upper-case letter somewhere and more than a lone lower-case word."""
    return tok[:1].isupper() or (any(c.isupper() for c in tok[1:]) and any(c.isalpha() for c in tok))


def _runs(text: str, start: int, end: int, sentence_starts: set[int]) -> list[tuple[int, int, bool]]:
    """Maximal runs of capitalised tokens (with inner connectors and model numbers): (start, end, initial)."""
    toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text, start, end)]
    out: list[tuple[int, int, bool]] = []
    i = 0
    while i < len(toks):
        a, b, tok = toks[i]
        if not _capitalised(tok):
            i += 1
            continue
        run_end, j = b, i + 1
        while j < len(toks):
            gap = text[run_end : toks[j][0]]
            if gap.strip() and not (gap == ". " and toks[j - 1][2] in _TITLE_ABBREVIATIONS):
                break
            nxt = toks[j][2]
            if _capitalised(nxt):
                run_end, j = toks[j][1], j + 1
            elif nxt.lower() in _CONNECTORS and j + 1 < len(toks) and _capitalised(toks[j + 1][2]):
                if text[toks[j][1] : toks[j + 1][0]].strip():
                    break
                run_end, j = toks[j + 1][1], j + 2
            elif nxt.isdigit() and len(nxt) <= 3:
                run_end, j = toks[j][1], j + 1  # "Model 3", "Ioniq 5"
            else:
                break
        out.append((a, run_end, a in sentence_starts))
        i = j
    return out


def _strip_possessive(text: str, a: int, b: int) -> tuple[int, int]:
    if text[a:b].endswith(("'s", "’s")):
        b -= 2
    return a, b


def find_entities(
    text: str,
    start: int,
    end: int,
    speakers: set[str],
    capitalised_elsewhere: set[str],
    is_person: bool,
) -> list[EntityHit]:
    """Entities in text[start:end]. `capitalised_elsewhere`: words seen capitalised mid-sentence in the segment."""
    hits: list[EntityHit] = []
    taken: list[Span] = []
    sents = sentences(text, start, end)
    sentence_starts: set[int] = set()
    for s, e in sents:
        m = re.match(r"[\s\-*•>#\d.)\"'“‘(]*", text[s:end])
        sentence_starts.add(s + (m.end() if m else 0))
        for tok in _TOKEN.finditer(text, s, e):
            if _opens_clause(text, tok.start(), s):
                sentence_starts.add(tok.start())
    markup = [] if is_person else _markup_ranges(text, start, end)
    for a, b in protected_ranges(text, start, end):
        inner_a, inner_b = a + 1, b - 1
        inner = text[inner_a:inner_b]
        if inner[:1].isupper() and len(inner.split()) <= 8 and not inner.rstrip().endswith((".", "!", "?")):
            hits.append(_hit(text, inner_a, inner_b, start))
            taken.append((a, b))
    for m in _CAMEL.finditer(text, start, end):
        a, b = (m.start(1), m.end(1)) if m.group(1) else (m.start(), m.end())
        if not _inside(a, b, taken):
            hits.append(_hit(text, a, b, start))
            taken.append((a, b))
    for a, b, initial in _runs(text, start, end, sentence_starts):
        if _inside(a, b, taken) or _inside(a, b, markup):
            continue
        a, b = _strip_possessive(text, a, b)
        words = text[a:b].split()
        # drop leading words that are not names ("Hey Tomas", "Congratulations to Priya" is two runs anyway)
        while words and (
            words[0].lower().strip("'’") in _NOT_NAMES
            or (words[0].lower() in _CONNECTORS and (initial or words[0].lower() != "the" or len(words) < 2))
            or (initial and words[0].lower() in _STARTERS)
        ):
            a = text.index(words[0], a) + len(words[0])
            a += len(text[a:b]) - len(text[a:b].lstrip())
            words = words[1:]
            initial = False  # the rest of the run is mid-sentence
        while words and (words[-1].lower() in _CONNECTORS or words[-1].lower().strip("'’") in _NOT_NAMES):
            b = text.rindex(words[-1], a, b)
            b = a + len(text[a:b].rstrip())
            words = words[:-1]
        if not words:
            continue
        name = text[a:b]
        low = name.lower()
        if (
            low in _NOT_NAMES
            or low in _COMMON_ACRONYMS
            or low in speakers
            or low.split()[0] in speakers
            and len(words) == 1
        ):
            continue
        if len(words) == 1 and low in _STARTERS:
            continue
        if (
            initial
            and len(words) == 1
            and name not in capitalised_elsewhere
            and not _ROLE_COPULA.match(text[b:])
        ):
            continue  # a capitalised word that only ever starts a sentence
        if re.fullmatch(r"[A-Z]{2,}s", name):
            continue  # a plural of a common acronym ("ORMs", "APIs")
        if len(words) == 1 and (
            _vocative(text, a, b) or any(sp.startswith(low) and len(low) >= 3 for sp in speakers)
        ):
            continue  # "Thanks, Mel!", "Mel, what's up": addressing someone (or a speaker's nickname)
        if not is_person and len(words) >= 4:
            continue  # title-case headings of an assistant's answer
        if re.fullmatch(r"[\d\s]+", name):
            continue
        hits.append(_hit(text, a, b, start))
    # "macOS" inside "macOS Sonoma": keep the longer name only
    return [
        h
        for h in hits
        if not any(
            o is not h and o.start <= h.start and h.end <= o.end and (o.end - o.start) > (h.end - h.start)
            for o in hits
        )
    ]


def _vocative(text: str, a: int, b: int) -> bool:
    before = text[max(0, a - 14) : a]
    after = text[b : b + 2]
    greeting = re.search(
        r"(?:^|[\s,!.])(?:hey|hi|hello|thanks|thank you|bye|congrats|yo|dear|oh|wow|sorry|cheers|yes|no|yeah)[\s,]*$",
        before,
        re.I,
    )
    opens = re.search(r"(?:^|[.!?\n]\s*)$", before) and after[:1] in (",", "!")
    closes = before.rstrip().endswith(",") and (after[:1] in ("!", ".", "?") or not after.strip())
    if closes and _ROLE_BEFORE.search(text[max(0, a - 60) : a]):
        closes = False  # "my college roommate, Dana.": an apposition, not someone addressed
    return bool(greeting or opens or closes)


def _hit(text: str, a: int, b: int, piece_start: int) -> EntityHit:
    before = text[max(piece_start, a - 60) : a]
    # "an app called Ledgerly", "we're calling it Crumb & Co": a name given to an undertaking
    called = _CALLED.search(before) and any(
        w in PROJECT_NOUNS for w in re.findall(r"[\w-]+", before.lower())[-6:]
    )
    words = text[a:b].split()
    project = called or _NAMING_IT.search(before) or (len(words) > 1 and words[-1].lower() in PROJECT_NOUNS)
    kind = "project" if project else "entity"
    after = text[b : b + 60]
    for pattern, where in (
        (_ROLE_BEFORE, before),
        (_ROLE_AFTER, after),
        (_ROLE_NAMED, before),
        (_ROLE_COPULA, after),
    ):
        role = pattern.search(where)
        role_words = role.group(2).lower().split() if role else []
        if role and role_words[-1] not in _NOT_ROLES and not _ROLE_FUNCTION_WORDS & set(role_words):
            owner = role.group(1).lower()
            kind = "project" if role_words[-1] in PROJECT_NOUNS else kind  # "my store, Glow Threads"
            return EntityHit(text[a:b], a, b, kind, role.group(2), owner if owner in ("my", "our") else "")
    return EntityHit(text[a:b], a, b, kind, "", "")


def capitalised_mid_sentence(text: str, start: int, end: int) -> set[str]:
    """Capitalised words that appear somewhere other than the start of a sentence."""
    out: set[str] = set()
    for s, e in sentences(text, start, end):
        for m in list(_TOKEN.finditer(text, s, e))[1:]:
            if _capitalised(m.group()) and not _opens_clause(text, m.start(), s):
                out.add(m.group())
    return out
