"""The title contract of `concepts.py` as code: short canonical titles for facts, and what counts as noise.

- `fact_title(text)` turns a restated fact (or an over-long title) into its canonical handle: the subject
  and head phrase, no dates, parentheses, filler adverbs or truncation marks, cut at the first clause break
  and to at most `MAX_FACT_TITLE_WORDS` words ending on a content word.
- `title_noise(title, type)` says why a title names nothing a memory should keep, as a reason code:
  `generic_title` (only pronouns / generic words), `sentence_title` (a name type whose "name" is a
  sentence), `fragment_title` (a fact with no content beyond its subject and a light verb, a dangling
  subordinate clause, a cut-off word), `boilerplate_title` (conversation formulas: "since we last chatted",
  "guess what", "here's one", "I'll check it out").

Both are plain text rules with no knowledge of who wrote the title, so the offline teacher, the Semantic
Mapper (for an LLM's titles) and the memory loop's router apply the same contract.
"""

from __future__ import annotations

import re

from memory_core.ontology.concepts import (
    FACT_TITLE_WORDS,
    FACT_TYPES,
    MAX_FACT_TITLE_WORDS,
    MAX_NAME_TITLE_WORDS,
    NAME_TYPES,
)

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]  # fmt: skip
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTH_FULL = "(?:" + "|".join(MONTHS) + ")"
_MONTH = "(?:" + "|".join(MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?"
_WEEKDAY_FULL = "(?:" + "|".join(WEEKDAYS) + ")s?"
_WEEKDAY = "(?:" + "|".join(WEEKDAYS) + r"|mon|tues?|wed|thurs?|fri|sat|sun)\.?"
_NUMBER = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|couple of|few|several)"
)
_YEAR = r"(?:19|20)\d\d"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_TEMPORAL = re.compile(
    r"\b(?:"
    r"yesterday|today|tonight|tomorrow|last night|the other day|earlier (?:today|this \w+)|"
    r"(?:this|last|next|this past|this coming) (?:morning|afternoon|evening|night|week|weekend|month|year|"
    + _WEEKDAY
    + r"|spring|summer|fall|autumn|winter)|"
    r"(?:about |around |almost |nearly |over |roughly )?" + _NUMBER + r" (?:days?|weeks?|months?|years?) ago|"
    r"(?:(?:in|on|since|from|by|until) )?(?:the )?(?:" + _DAY + r" (?:of )?" + _MONTH + r"|" + _MONTH + r" "
    r"(?:the )?" + _DAY + r"(?!\w))(?:,? " + _YEAR + r")?|"
    r"(?:(?:in|since|from|by|until) )?" + _MONTH + r",? " + _YEAR + r"|"
    r"(?:in|since|from|by|until|during|on) " + _MONTH_FULL + r"|"
    r"(?:in|since|from|by|until|back in|of) " + _YEAR + r"|"
    r"(?:on )?" + _WEEKDAY_FULL + r")(?!\w)",
    re.IGNORECASE,
)
_TIME_AS_SUBJECT = re.compile(r"\s+(?:was|were|is|has|had|will|'s|’s|has been|went|flew|passed)\b", re.I)
_PARENTHESES = re.compile(r"\s*[(\[][^)\]]*(?:[)\]]|$)")
_TRUNCATION = re.compile(r"\s*(?:…|\.\.\.+)\s*$")
# the first clause break: punctuation, a dash, or a conjunction that starts a reason / comment clause
_BREAK = re.compile(
    r"\s*(?:[,;:!?]|\.(?:\s|$)|\s[-–—]+\s|(?<=\w)-\s|[–—])|\s+(?:because|'cause|cause|cuz|which|so that|whereas|"
    r"although|though|but|and then|as well as)\s",
    re.IGNORECASE,
)
_FILLERS = {"just", "really", "actually", "also", "super", "pretty", "totally", "kinda", "even", "definitely",
            "honestly", "basically", "literally", "truly", "seriously", "absolutely", "finally", "anyway",
            "already", "recently", "lately", "currently", "now", "so", "very", "quite", "too", "still",
            "ok", "okay", "oh", "well", "yeah", "wow", "hey"}  # fmt: skip
_ATTITUDE = re.compile(
    r"^(?P<s>[\w'’\- ]{1,40}?) (?:thinks|feels|believes|guesses|knows|reckons|supposes|figures|hopes)"
    r"(?: that)? (?=(?P=s)\b)",
    re.IGNORECASE,  # "The user thinks the user will ..."
)
_STRAY_QUOTES = re.compile(r"(?<![\w])['\"“”‘’]+|['\"“”‘’]+(?![\w])|[\"“”]")
_CLAUSE_BOUNDARIES = {"and", "or", "but", "when", "while", "that", "which", "who", "because", "since", "where",
                      "if", "whenever", "until", "although", "though"}  # fmt: skip
_PHRASE_BOUNDARIES = {"with", "like", "as", "for", "in", "on", "at", "from", "by", "about", "after", "before",
                      "into", "during", "without", "through"}  # fmt: skip
_LEADING_SUBORDINATOR = re.compile(r"^(?:when|once|after|before|since|as soon as|ever since)\s+", re.I)
_DANGLING = {"a", "an", "the", "and", "or", "but", "nor", "so", "to", "of", "for", "with", "at", "in", "on",
             "from", "by", "about", "into", "onto", "than", "like", "as", "that", "which", "who", "whom",
             "whose", "if", "when", "while", "because", "my", "our", "your", "his", "her", "their", "its",
             "is", "are", "was", "were", "be", "been", "has", "have", "had", "will",
             "would", "can", "could", "should", "all", "some", "any", "every", "each", "this", "these",
             "those", "more", "most", "very", "such", "own"}  # fmt: skip
_PRONOUNS = {"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your", "yours", "he", "him",
             "his", "she", "her", "hers", "they", "them", "their", "theirs", "it", "its", "itself", "this",
             "that", "these", "those", "one", "ones", "someone", "somebody", "something", "anything",
             "everything", "nothing", "everyone", "anyone", "there", "here", "what", "who", "others",
             "other", "thing", "things", "stuff", "lot", "lots", "bit", "way", "kind", "sort"}  # fmt: skip
_FUNCTION = _DANGLING | _PRONOUNS | _FILLERS | {
    "am", "'m", "'s", "'re", "'ve", "'ll", "'d", "not", "no", "never", "ever", "always", "it's", "that's",
    "there's", "here's", "being", "get", "gets", "got", "getting", "go", "goes", "going", "went", "gone",
    "make", "makes", "made", "making", "did", "done", "doing", "thing", "things", "much", "many", "again",
    "back", "around", "through", "up", "out", "off", "over", "where", "how", "why", "then", "just", "yes", "let", "lets", "let's",
    "might", "must", "shall", "may", "gonna", "wanna", "gotta", "really", "guess",
}  # fmt: skip
_LIGHT_VERBS = {"finished", "started", "did", "done", "doing", "got", "getting", "went", "going", "made", "making",
                "tried", "trying", "happened", "happening", "been", "came", "coming", "had", "having", "saw",
                "seeing", "chatted", "talked", "spoke", "thought", "thinking", "felt", "feeling", "said",
                "told", "know", "knows", "knew", "see", "sees", "guess", "guesses", "mean", "means"}  # fmt: skip
_SUBORDINATE_ONLY = re.compile(
    r"^(?:whenever|when|while|if|unless|whether|because|since|until|till|although|though|as if|as long as|"
    r"so that|in case|even if|even though|wherever|whatever|whoever)\b",
    re.IGNORECASE,
)
GENERIC_WORDS = frozenset(
    (
        "thing things stuff something anything everything nothing it this that these those them they he she "
        "i me you we us one ones someone somebody people person time times day today yesterday tomorrow way "
        "lot lots kind sort bit idea ideas question answer yes no ok okay hi hello hey thanks thank"
    ).split()
)
_BOILERPLATE = re.compile(
    r"\b(?:last (?:chatted|talked|spoke|caught up|met|saw each other)|guess what|"
    r"(?:check|checking) (?:it|this|that|them|those|these) out|keep (?:you|me) posted|let (?:you|me) know$|"
    r"(?:is|are|am|'m) getting there|sounds? (?:great|good|fun|amazing|awesome)|nice to (?:meet|hear|see)|"
    r"good to (?:hear|see|know)|(?:glad|happy|sorry) to hear|thanks? (?:you )?(?:so much |for)|"
    r"(?:talk|catch up|chat) (?:soon|later)|take care|have a (?:good|great|nice)|"
    r"what(?:'s| is) up|how(?:'s| is| are) (?:it going|you|things)|looking forward to (?:it|that|hearing)|"
    r"can't wait to (?:see|hear|read|try) (?:it|that|them|this|those|more)|"
    r"(?:appreciates?|appreciated|loves? having) (?:you|your|having you)|have faith in yourself|"
    r"keep (?:you|ya) (?:updated|posted|in the loop)|(?:do not|don't) forget (?:that )?(?:\w+ )*?told you)\b"
    r"|^(?:here(?:'s| is| are) (?:one|this|that)\b|"
    r"(?:thanks?|thank you|congrats|congratulations|hi|hello|hey|bye|wow|yay|aw+)\b)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_][\w'’\-+&]*")


def words(text: str) -> list[str]:
    return [w.replace("’", "'").lower() for w in _WORD.findall(text)]


def _clean_tail(ws: list[str]) -> list[str]:
    """Drop trailing function words and possessives: a title ends on a content word ("... with Caroline's" →
    "... with" → "...")."""
    while ws and (ws[-1].lower().strip(",") in _DANGLING or ws[-1].lower().endswith(("'s", "’s", "-"))):
        ws = ws[:-1]
    return ws


def strip_dates(text: str) -> str:
    """Text without parenthesised parts and time expressions ("yesterday", "last week", "in May 2023")."""
    out = _PARENTHESES.sub("", text)
    out = _TEMPORAL.sub(_drop_time, out)
    return re.sub(r"\s+", " ", out).strip()


def _drop_time(m: re.Match) -> str:
    # "Last week was wild": the time expression is the subject, the sentence needs it
    if _TIME_AS_SUBJECT.match(m.string, m.end()):
        return m.group()
    return " "


def fact_title(text: str, words_target: int = FACT_TITLE_WORDS, max_words: int = MAX_FACT_TITLE_WORDS) -> str:
    """The canonical short title of a fact, from its restatement or from an over-long title.

    "Caroline went to a LGBTQ support group yesterday (7 May 2023)." → "Caroline went to a LGBTQ support
    group"; "Melanie loves camping trips with Melanie's fam, 'cause nature brings such peace" → "Melanie loves
    camping trips with Melanie's fam". Never adds "…": a title ends on a whole content word.
    """
    text = re.sub(r"\s+", " ", text or "").strip()
    truncated = bool(_TRUNCATION.search(text))  # an older title cut mid-phrase ("... with Caroline's…")
    text = _TRUNCATION.sub("", text)
    text = strip_dates(text).strip(" \"'“”‘’`*_.,;:!?-–—")
    text = _LEADING_SUBORDINATOR.sub("", text)
    text = _ATTITUDE.sub("", text)
    brk = _BREAK.search(text)
    while brk is not None and len(text[: brk.start()].split()) < 4:  # a break right after the subject
        brk = _BREAK.search(text, brk.end())
    title = _shorten(text[: brk.start()] if brk is not None else text, words_target, max_words, truncated)
    if len(title.split()) < 2:  # the cut left only a subject: shorten the whole text instead
        title = _shorten(text, words_target, max_words, truncated)
    return title[:1].upper() + title[1:]


def _shorten(text: str, words_target: int, max_words: int, truncated: bool) -> str:
    text = _STRAY_QUOTES.sub("", text)
    text = re.sub(r"\bso (?=much\b|many\b|far\b)", "SO ", text, flags=re.I)  # "so much" keeps its "so"
    ws = [w for w in text.split() if w == "SO" or w.lower().strip(",.;:!?") not in _FILLERS]
    ws = [w if w != "SO" else "so" for w in ws]
    ws = [w.strip(",;:") for w in ws if w.strip(",;:")]
    if len(ws) > max_words:
        # a phrase of up to max_words stays whole; a longer one is cut before its first clause boundary
        # ("and", "when", ...) or else its last preposition that keeps five words or more ("... with a
        # renowned outdoor gear company" → "John got this amazing deal"), else near the target length,
        # never ending on a function word
        clause = [
            i
            for i in range(4, max_words + 1)
            if ws[i].lower() in _CLAUSE_BOUNDARIES
            and not (i + 1 < len(ws) and ws[i + 1].lower() == "others")  # "John and others"
            and ws[i - 1].lower() not in ("a", "the")  # "for a while"
        ]
        phrase = [i for i in range(5, max_words + 1) if ws[i].lower() in _PHRASE_BOUNDARIES]
        if clause or phrase:
            ws = _clean_tail(ws[: clause[0] if clause else phrase[-1]])
        else:
            cut = _clean_tail(ws[:words_target])
            ws = cut if len(cut) >= 3 else ws[:words_target]
    elif truncated:
        ws = _clean_tail(ws) or ws
    return " ".join(ws).strip(" \"'“”‘’`*_.,;:!?-–—")


def content_words(title: str) -> list[str]:
    """The words of a title that carry content: not its subject (the first word and a possessive or
    "and others" after it), not pronouns, auxiliaries, prepositions or fillers."""
    ws = words(title)
    if ws and title[:1].isupper():
        ws = ws[1:]
        if ws[:2] == ["and", "others"]:
            ws = ws[2:]
    return [w for w in ws if w not in _FUNCTION and not w.isdigit()]


def title_noise(title: str, concept_type: str) -> tuple[str, str] | None:
    """(reason code, sentence) when the title names nothing worth a concept, else None."""
    ws = words(title)
    if not ws:
        return "empty_title", f"title {title!r} has no words"
    if all(w in GENERIC_WORDS or w in _PRONOUNS for w in ws):
        return "generic_title", f"title {title!r} is only pronouns / generic words"
    if concept_type in NAME_TYPES:
        if len(ws) > MAX_NAME_TITLE_WORDS:
            return "sentence_title", f"a {concept_type} title has {len(ws)} words: a sentence, not a name"
        return None
    if concept_type not in FACT_TYPES:
        return None
    if _BOILERPLATE.search(title.replace("’", "'")):
        return "boilerplate_title", f"title {title!r} is a conversational formula, not a fact"
    if _SUBORDINATE_ONLY.match(title):
        return "fragment_title", f"title {title!r} is a subordinate clause without its main clause"
    if title.rstrip().endswith(("-", "–", "—")):
        return "fragment_title", f"title {title!r} is cut off mid-word"
    content = content_words(title)
    if not content or (len(content) == 1 and content[0] in _LIGHT_VERBS):
        return (
            "fragment_title",
            f"title {title!r} states nothing beyond its subject"
            + (f" and {content[0]!r}" if content else ""),
        )
    return None
