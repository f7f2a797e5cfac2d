"""Plain-text machinery of the offline teacher: sentences and clauses with exact offsets, third-person
restatement of first-person clauses, and resolution of relative dates against the message's time.

Everything works on (start, end) offsets into the original message text, so whatever is cut out is a
verbatim substring by construction.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory_core.ontology.titles import MONTHS, WEEKDAYS

Span = tuple[int, int]

_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "prof",
    "approx",
    "no",
    "fig",
}
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n+")
_QUOTED = re.compile(r"(?<![\w])['\"“‘]([^'\"“”‘’\n]{2,80})['\"”’](?![\w])")

SUBJECT_WORDS = {
    "i", "i'm", "i've", "i'll", "i'd", "im", "ive", "my", "we", "we're", "we've", "we'll", "our",
    "he", "she", "they", "he's", "she's", "they're", "it", "it's",
}  # fmt: skip
FIRST_PERSON = {"i", "i'm", "i've", "i'll", "i'd", "im", "ive", "me", "my", "mine", "myself", "we", "we're",
                "we've", "we'll", "we'd", "our", "ours", "us"}  # fmt: skip
_FIRST_SUBJECTS = {"i", "i'm", "i've", "i'd", "i'll", "we", "we're", "we've"}
_COMPLEMENTIZERS = {"how", "what", "that", "where", "when", "why", "if", "whether", "than", "as", "which", "who",
                    "whom", "whatever", "wherever", "whenever", "like", "think", "thought", "know", "knew", "guess",
                    "before", "after", "until", "till", "once", "unless", "because", "while", "since", "though",
                    "although", "whereas", "so", "wish", "hope", "bet", "said", "say"}  # fmt: skip
CONJUNCTIONS = {"and", "but", "so", "because", "since", "while", "although", "though", "cause", "cuz", "plus"}
SUBORDINATORS = {
    "when",
    "whenever",
    "while",
    "once",
    "as",
    "after",
    "before",
    "since",
    "until",
    "if",
    "because",
}
FILLER_ADVERBS = {"honestly", "actually", "really", "also", "then", "now", "still", "yet", "anyway", "luckily",
                  "sadly", "thankfully", "unfortunately", "fortunately", "basically", "apparently", "recently"}  # fmt: skip
LEADING_FILLERS = re.compile(  # used with .match(text, pos): anchored at pos without "^"
    r"(?:(?:and|but|so|because|since|while|although|though|also|plus|then|well|oh|oh no|ah|wow|yeah|yes|no|ok|okay|"
    r"honestly|actually|anyway|anyways|by the way|btw|hey|hi|hello|lol|haha|um|uh|hmm|ugh|sure|right|"
    r"in fact|to be honest|tbh|speaking of which|funny enough)\b[\s,!.:;—–-]*)+",
    re.IGNORECASE,
)
_PAST_IRREGULAR = {
    "went", "got", "had", "did", "made", "took", "saw", "met", "came", "gave", "found", "left", "bought", "brought",
    "thought", "felt", "told", "said", "ran", "began", "wrote", "read", "spent", "sent", "kept", "won", "lost",
    "paid", "built", "taught", "caught", "fought", "sold", "held", "heard", "knew", "drove", "flew", "ate", "drank",
    "swam", "sang", "rode", "wore", "threw", "grew", "drew", "chose", "broke", "spoke", "woke", "became", "fell",
    "forgot", "hurt", "quit", "put", "set", "let", "cut", "hit", "shut", "was", "were", "sat", "stood", "slept",
    "understood", "led", "fed", "meant", "dealt", "lent", "shot", "stuck", "struck", "tore", "hung", "dug", "bit",
}  # fmt: skip
ADVERBS = {"really", "also", "just", "usually", "always", "never", "often", "still", "actually", "finally",
           "sometimes", "rarely", "recently", "honestly", "totally", "definitely", "already", "even", "truly",
           "mostly", "probably", "seriously", "absolutely", "literally", "only", "generally", "normally",
           "typically", "occasionally", "mainly", "currently", "now", "kinda", "kind", "sort", "pretty", "so",
           "very", "ever", "once", "again", "first", "last", "personally", "barely", "hardly"}  # fmt: skip
_MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "can't", "couldn't", "gotta",
           "gonna", "wanna", "used", "better",
           "won't", "wouldn't", "shouldn't", "mustn't", "didn't", "wasn't", "weren't", "hadn't", "ought"}  # fmt: skip
_THIRD_PERSON = {"am": "is", "'m": "is", "have": "has", "do": "does", "go": "goes", "be": "is", "don't": "doesn't",
                 "haven't": "hasn't", "are": "is", "aren't": "isn't", "'ve": "has", "'re": "is"}  # fmt: skip
WORD = re.compile(r"[^\W_][\w'’&+\-]*")


def norm_apostrophes(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


def sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentence spans inside text[start:end], trimmed of surrounding whitespace."""
    end = len(text) if end is None else end
    spans: list[Span] = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if m.group().startswith(".") and len(m.group()) == 1:
            word = re.search(r"([A-Za-z.]+)$", text[pos : m.start()])
            if word and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                continue
            if m.end() < end and text[m.end() : m.end() + 2].strip()[:1].islower():
                continue  # "e.g. foo", "approx. 3": not a boundary
        spans.append((pos, m.end()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return [s for s in (trim(text, a, b) for a, b in spans) if s[1] > s[0]]


def trim(text: str, start: int, end: int, chars: str = " \t\r\n") -> Span:
    while start < end and text[start] in chars:
        start += 1
    while end > start and text[end - 1] in chars:
        end -= 1
    return start, end


def protected_ranges(text: str, start: int, end: int) -> list[Span]:
    """Quoted titles: never cut inside them."""
    return [(m.start(), m.end()) for m in _QUOTED.finditer(text, start, end)]


def _inside(pos: int, ranges: list[Span]) -> bool:
    return any(a < pos < b for a, b in ranges)


def _is_past(word: str) -> bool:
    w = word.lower()
    return w in _PAST_IRREGULAR or (w.endswith("ed") and len(w) > 4)


def clauses(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """Clauses of one sentence: (start, end, connector), the connector being the conjunction that introduced
    the clause ('' for the first one, ';' after a semicolon)."""
    guard = protected_ranges(text, start, end)
    cuts: list[tuple[int, int, str]] = []  # (cut at, clause starts at, connector)
    tokens = [
        (m.start(), m.end(), norm_apostrophes(m.group()).lower()) for m in WORD.finditer(text, start, end)
    ]
    for i, (a, _b, w) in enumerate(tokens):
        if _inside(a, guard) or i == 0:
            continue
        before = text[tokens[i - 1][1] : a]
        comma = "," in before or ";" in before or "—" in before or " - " in before or "–" in before
        semicolon = ";" in before
        nxt = [t[2] for t in tokens[i + 1 : i + 3]]
        if semicolon and w not in CONJUNCTIONS:
            cuts.append((a, a, ";"))
            continue
        if w in CONJUNCTIONS and nxt:
            j = i + 1
            while j < len(tokens) and tokens[j][2] in FILLER_ADVERBS:
                j += 1
            following = tokens[j][2] if j < len(tokens) else ""
            if comma and w in {"and", "but", "so", "plus"} and j < len(tokens):
                cuts.append((a, tokens[i + 1][0], w))
            elif following in SUBJECT_WORDS or (
                w == "and" and _is_past(following) and _has_subject_verb(tokens[:i])
            ):
                cuts.append((a, tokens[i + 1][0], w))
            elif w in {"because", "since", "although", "though", "while"} and following and i > 2:
                cuts.append((a, tokens[i + 1][0], w))
            continue
        if comma and w in {
            "i",
            "i'm",
            "i've",
            "i'll",
            "i'd",
            "my",
            "we",
            "we're",
            "we've",
            "he",
            "she",
            "they",
            "he's",
            "she's",
            "they're",
            "he'd",
            "she'd",
        }:
            cuts.append((a, a, ","))
        elif (
            w == "i"
            and not comma
            and i >= 4
            and tokens[0][2] in SUBORDINATORS
            and not cuts
            and any(t[2] in _FIRST_SUBJECTS for t in tokens[:i])
            and tokens[i - 1][2] not in CONJUNCTIONS | _COMPLEMENTIZERS
        ):
            # "When I moved to Denver in 2021 I got my first cat"; never inside a noun phrase with a
            # relative clause ("the support I got was really helpful", "the struggles I had")
            cuts.append((a, a, ""))
    out: list[tuple[int, int, str]] = []
    pos, conn = start, ""
    for cut, clause_start, connector in cuts:
        s = trim(text, pos, cut, " \t\r\n,;:—–-")
        if s[1] > s[0]:
            out.append((s[0], s[1], conn))
        pos, conn = clause_start, connector
    s = trim(text, pos, end, " \t\r\n,;:—–-")
    if s[1] > s[0]:
        out.append((s[0], s[1], conn))
    return out


def _has_subject_verb(tokens: list[tuple[int, int, str]]) -> bool:
    words = [t[2] for t in tokens]
    return any(w in SUBJECT_WORDS or w in {"me", "us"} for w in words) and len(words) >= 3


_FRAME = re.compile(
    r"(?:one thing (?:i|we) (?:know|learned|love|noticed|realized)(?: for sure)? is(?: that)?|the (?:thing|truth|point) "
    r"is(?: that)?|you know,?|what i (?:mean|love|know) is(?: that)?)\s+",
    re.IGNORECASE,
)


def clean_clause(text: str, start: int, end: int) -> Span:
    """Drop leading fillers ("By the way, honestly, ...") and frames ("One thing I know is that ..."), and
    trailing punctuation."""
    m = LEADING_FILLERS.match(text, start, end)
    if m and m.end() < end:
        start = m.end()
    m = _FRAME.match(text, start, end)
    if m and m.end() < end:
        start = m.end()
    start, stop = trim(text, start, end, " \t\r\n,;:.!?—–-\"'“”*")
    for opening, closing in (("'", "'"), ('"', '"'), ("“", "”"), ("‘", "’")):
        inner = text[start:stop]
        if (
            stop < end
            and text[stop] == closing
            and re.search(rf"(?:^|\s){opening}\w", inner)
            and (inner.count(closing) if opening != closing else inner.count(opening) % 2) in (0, 1)
        ):
            stop += 1  # a quoted title at the end keeps its closing quote ("we discussed 'Emma'")
            break
    return start, stop


def words_of(text: str) -> list[str]:
    return [norm_apostrophes(w).lower() for w in WORD.findall(text)]


# ------------------------------------------------------------------------------------- restatement
def third_person_verb(word: str) -> str:
    low = word.lower()
    if low in _THIRD_PERSON:
        return _THIRD_PERSON[low]
    if low in _MODALS or _is_past(low) or low.endswith("s") and not low.endswith("ss") or "'" in low:
        return word
    if re.search(r"(sh|ch|x|z|ss|o)$", low):
        return word + "es"
    if re.search(r"[^aeiou]y$", low):
        return word[:-1] + "ies"
    return word + "s"


_PARTICIPLES = {"been", "gone", "done", "seen", "known", "taken", "given", "written", "eaten", "driven", "grown",
                "thrown", "flown", "shown", "spoken", "broken", "chosen", "forgotten", "gotten", "begun", "run",
                "become", "come", "met", "had", "made", "heard", "left", "lost", "found", "told", "thought"}  # fmt: skip
_CONTRACTIONS = [
    (re.compile(r"\bI wanna\b"), "{S} wants to"),
    (re.compile(r"\bI gotta\b"), "{S} has to"),
    (re.compile(r"\bI['’]m gonna\b"), "{S} is going to"),
    (re.compile(r"\bI['’]m\b"), "{S} is"),
    (re.compile(r"\bIm\b"), "{S} is"),
    (re.compile(r"\bI am\b"), "{S} is"),
    (re.compile(r"\bI['’]ve\b"), "{S} has"),
    (re.compile(r"\bI['’]ll\b"), "{S} will"),
    (re.compile(r"\bI['’]d\b"), "{S} would"),
    (re.compile(r"\bI was\b"), "{S} was"),
    (re.compile(r"\bwe['’]re\b", re.I), "{S} and others are"),
    (re.compile(r"\bwe['’]ve\b", re.I), "{S} and others have"),
    (re.compile(r"\bwe['’]ll\b", re.I), "{S} and others will"),
    (re.compile(r"\bwe['’]d\b", re.I), "{S} and others would"),
]
_LISTENER_CONTRACTIONS = [
    (re.compile(r"\byou['’]re\b", re.I), "{L} is"),
    (re.compile(r"\byou are\b", re.I), "{L} is"),
    (re.compile(r"\byou were\b", re.I), "{L} was"),
    (re.compile(r"\byou['’]ve\b", re.I), "{L} has"),
    (re.compile(r"\byou['’]ll\b", re.I), "{L} will"),
    (re.compile(r"\byou['’]d\b", re.I), "{L} would"),
]
# "no longer" and "not" sit between a subject and its verb like an adverb: "I no longer live" → "... no longer lives"
_ADVERB = (
    r"(?:no longer|not|"
    + "|".join(sorted(ADVERBS))
    + r"|(?!(?:apply|reply|rely|supply|fly|ally)\b)[a-z]{2,}ly)"
)
_HAD = re.compile(
    r"\bI['’]d ((?:" + _ADVERB + r" )*)(?=(?:" + "|".join(sorted(_PARTICIPLES)) + r"|[a-z]+ed)\b)"
)
_SUBJECT_YOU = re.compile(
    r"(^|\b(?:that|because|cause|when|if|how|what|why|where|and|but|so|as|since|while|though|although)\s+)"
    r"you ((?:" + _ADVERB + r" )*)([A-Za-z'’]+)",
    re.IGNORECASE,
)


def restate(clause: str, subject: str, possessive: str, listener: str = "") -> str:
    """First person → third person: "I'm nervous about my race" → "Nadia is nervous about Nadia's race".

    Negation and tense stay as they were ("I no longer live in Berlin" → "Dana no longer lives in Berlin",
    "I'd been there" → "Dana had been there"). With a `listener` (the one person spoken to), "you" becomes
    them: "I think freelancing suits you" → "Iris thinks freelancing suits Marco"."""
    out = _HAD.sub(lambda m: f"{subject} had {m.group(1)}", clause)
    for pattern, repl in _CONTRACTIONS:
        out = pattern.sub(repl.replace("{S}", subject), out)

    def subject_verb(m: re.Match) -> str:
        adverbs, verb = m.group(1) or "", m.group(2)
        return f"{subject} {adverbs}{third_person_verb(verb)}"

    out = re.sub(r"\bI ((?:" + _ADVERB + r" )*)([A-Za-z'’]+)", subject_verb, out)
    out = re.sub(r"\bI\b", subject, out)
    out = re.sub(r"\b[Mm]y\b", possessive, out)
    out = re.sub(r"\bmine\b", possessive, out)
    out = re.sub(r"\b(?:me|myself)\b", subject, out)
    out = re.sub(r"\b[Ww]e\b", f"{subject} and others", out)
    out = re.sub(r"\b[Oo]ur\b", possessive, out)
    out = re.sub(r"\bus\b", f"{subject} and others", out)
    if listener:
        out = _to_listener(out, listener)
    out = re.sub(r"\s+", " ", out).strip()
    # a sentence starts with a capital even when the subject is "the user"
    return out[:1].upper() + out[1:] if out else out


def _to_listener(text: str, listener: str) -> str:
    for pattern, repl in _LISTENER_CONTRACTIONS:
        text = pattern.sub(repl.replace("{L}", listener), text)
    text = _SUBJECT_YOU.sub(
        lambda m: f"{m.group(1)}{listener} {m.group(2) or ''}{third_person_verb(m.group(3))}", text
    )
    text = re.sub(r"\b(?:your|yours)\b", f"{listener}'s", text, flags=re.I)
    return re.sub(r"\b(?:you|yourself)\b", listener, text, flags=re.I)


# ------------------------------------------------------------------------------------- dates
def _fmt(d: datetime) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


def _last_weekday(ref: datetime, weekday: int) -> datetime:
    delta = (ref.weekday() - weekday) % 7 or 7
    return ref - timedelta(days=delta)


def _next_weekday(ref: datetime, weekday: int) -> datetime:
    delta = (weekday - ref.weekday()) % 7 or 7
    return ref + timedelta(days=delta)


def _shift_month(ref: datetime, months: int) -> datetime:
    m = ref.month - 1 + months
    return ref.replace(year=ref.year + m // 12, month=m % 12 + 1, day=1)


_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "couple": 2, "few": 3}  # fmt: skip
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last night|this (?:morning|afternoon|evening)|"
    r"(?:last|next|this past|this coming) (?:week|weekend|month|year|"
    + "|".join(WEEKDAYS)
    + r")|(?:on )?(?:"
    + "|".join(WEEKDAYS)
    + r")|(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few) "
    r"(days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE,
)


def resolve_relative_date(text: str, ref: datetime, future: bool = False) -> str | None:
    """The calendar date a relative expression in `text` points to, from the message time `ref`."""
    m = _RELATIVE.search(text)
    if not m:
        return None
    expr = m.group(1).lower()
    if expr in ("yesterday", "last night"):
        return _fmt(ref - timedelta(days=1))
    if (
        expr in ("today", "tonight")
        or expr.startswith("this morning")
        or expr.startswith("this after")
        or expr.startswith("this even")
    ):
        return _fmt(ref)
    if expr == "tomorrow":
        return _fmt(ref + timedelta(days=1))
    if m.group(2):
        n = int(m.group(2)) if m.group(2).isdigit() else _NUMBERS.get(m.group(2).lower(), 1)
        unit = m.group(3).lower()
        if unit.startswith("month"):
            return _shift_month(ref, -n).strftime("%B %Y")
        if unit.startswith("year"):
            return str(ref.year - n)
        return _fmt(ref - timedelta(days=n * _UNITS[unit]))
    parts = expr.split()
    if parts[0] == "on" or (len(parts) == 1 and parts[0] in WEEKDAYS):
        day = WEEKDAYS.index(parts[-1])
        return _fmt(_next_weekday(ref, day) if future else _last_weekday(ref, day))
    forward = parts[0] in ("next", "this") and parts[1] == "coming" or parts[0] == "next"
    unit = parts[-1]
    if unit in WEEKDAYS:
        day = WEEKDAYS.index(unit)
        return _fmt(_next_weekday(ref, day) if forward else _last_weekday(ref, day))
    if unit == "week":
        return f"the week {'after' if forward else 'before'} {_fmt(ref)}"
    if unit == "weekend":
        sat = _next_weekday(ref, 5) if forward else _last_weekday(ref, 5)
        return f"the weekend of {_fmt(sat)}"
    if unit == "month":
        return _shift_month(ref, 1 if forward else -1).strftime("%B %Y")
    if unit == "year":
        return str(ref.year + (1 if forward else -1))
    return None


def explicit_date(text: str) -> bool:
    """Does the text name a calendar time (a month, a year, a weekday or a relative day)?"""
    low = text.lower()
    return bool(
        re.search(r"\b(" + "|".join(MONTHS) + r")\b", low)
        or re.search(r"\b(19|20)\d\d\b", low)
        or _RELATIVE.search(low)
        or re.search(r"\b(ago|recently|earlier this|last time|the other day)\b", low)
    )
