"""The title contract of `concepts.py` as code: short canonical titles for facts, and what counts as noise.

- `fact_title(text)` turns a restated fact (or an over-long title) into its canonical handle: the subject
  and head phrase, no dates, parentheses, filler adverbs or truncation marks, cut at the first clause break
  and to at most `MAX_FACT_TITLE_WORDS` words ending on a content word.
- `title_noise(title, type)` says why a title names nothing a memory should keep, as a reason code:
  `generic_title` (only pronouns / generic words), `sentence_title` (a name type whose "name" is a
  sentence), `fragment_title` (a fact with no content beyond its subject and a light verb, a dangling
  subordinate clause, a cut-off word), `boilerplate_title` (conversation formulas: "since we last chatted",
  "guess what", "here's one", "I'll check it out"), and for a fact that is not a well-formed statement
  `subjectless_title` (a pronoun, gerund or bare verb where the subject goes: "It made Caroline realize ..."),
  `dangling_title` (it stops before the statement does: "Melanie is planning a few", "Caroline chose them")
  and `vague_title` (only an evaluation: "Melanie had a great time").

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
_WEEKDAY_FULL = "(?:" + "|".join(WEEKDAYS) + ")"  # "on Sundays" is a habit: it stays
_WEEKDAY = "(?:" + "|".join(WEEKDAYS) + r"|mon|tues?|wed|thurs?|fri|sat|sun)\.?"
_NUMBER = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|couple of|few|several)"
)
_YEAR = r"(?:19|20)\d\d"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_TEMPORAL = re.compile(
    r"\b(?:"
    r"yesterday|today|tonight|tomorrow|last night|the other day|earlier (?:today|this \w+)|these days|nowadays|"
    r"(?:this|last|next|this past|this coming) (?:morning|afternoon|evening|night|week|weekend|month|year|"
    + _WEEKDAY
    + r"|spring|summer|fall|autumn|winter)|"
    r"(?:about |around |almost |nearly |over |roughly )?" + _NUMBER + r" (?:days?|weeks?|months?|years?) ago|"
    r"(?:(?:in|on|since|from|by|until) )?(?:the )?(?:" + _DAY + r" (?:of )?" + _MONTH + r"|" + _MONTH + r" "
    r"(?:the )?" + _DAY + r"(?!\w))(?:,? " + _YEAR + r")?|"
    r"(?:(?:in|since|from|by|until) )?" + _MONTH + r",? " + _YEAR + r"|"
    r"(?:in|since|from|by|until|during|on) " + _MONTH_FULL + r"|"
    r"(?:in|since|from|by|until|back in|of) " + _YEAR + r"|"
    r"(?<!every )(?<!other )(?:on )?" + _WEEKDAY_FULL + r"(?! (?:morning|afternoon|evening|night)s))(?!\w)",
    re.IGNORECASE,
)
_TIME_AS_SUBJECT = re.compile(r"\s+(?:was|were|is|has|had|will|'s|’s|has been|went|flew|passed)\b", re.I)
_PARENTHESES = re.compile(r"\s*[(\[][^)\]]*(?:[)\]]|$)")
_TRUNCATION = re.compile(r"\s*(?:…|\.\.\.+)\s*$")
# the first clause break: punctuation, a dash, or a conjunction that starts a reason / comment clause
# never inside a number ("1:58", "40,000", "3.5") or after an initial or a title ("U.S.", "Dr.")
_BREAK = re.compile(
    r"\s*(?:[;!?]|,(?!\d)|(?<!\d),|:(?!\d)|(?<!\d):|(?<![A-Z])(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bSt)(?<!\bvs)(?<!Mrs)"
    r"\.(?:\s|$)|\s[-–—]+\s|(?<=\w)-\s|[–—])|\s+(?:because|'cause|cause|cuz|which|so that|whereas|"
    r"although|though|but|and then|as well as)\s",
    re.IGNORECASE,
)
# a leading phrase that is not the fact's subject: "Between Kafka and RabbitMQ, the user would rather ..."
_LEADING_PHRASE = re.compile(
    r"^(?:between|for|in|on|at|after|before|during|with|without|from|despite|besides|apart from|like|unlike|as for|"
    r"in terms of|speaking of|regarding|honestly|anyway|plus|also|so|well|oh|wow|yeah)\b[^,;:]{0,60}[,;:]\s+",
    re.IGNORECASE,
)
_FILLERS = {"just", "really", "actually", "also", "super", "pretty", "totally", "kinda", "even", "definitely",
            "honestly", "basically", "literally", "truly", "seriously", "absolutely", "finally", "anyway",
            "already", "recently", "lately", "currently", "now", "so", "very", "quite", "too", "still",
            "ok", "okay", "oh", "yeah", "wow", "hey"}  # fmt: skip
_ATTITUDE = re.compile(
    r"^(?P<s>[\w'’\- ]{1,40}?) (?:thinks|feels|believes|guesses|knows|reckons|supposes|figures|hopes)"
    r"(?: that)? (?=(?P=s)\b)",
    re.IGNORECASE,  # "The user thinks the user will ..."
)
_QUOTED = re.compile(r"(?<![\w])['\"“‘][^'\"“”‘’\n]{2,80}(?:['\"”’](?![\w])|$)")  # a title cut at its end too
_APPOSITION = re.compile(r",\s+([A-Z][\w'’\-]+(?:\s+[A-Z][\w'’\-]+)?),(?=\s)")
_AMOUNT = re.compile(r"\d[:.,]\d+|[$€£]\s?\d+|\d+\s?%|\b\d{2,}\b")
_DETERMINERS = frozenset("a an the my our your his her their its this that these those".split())
_STRAY_QUOTES = re.compile(r"(?<![\w])['\"“”‘’]+|['\"“”‘’]+(?![\w])|[\"“”]")
_CLAUSE_BOUNDARIES = {"and", "or", "but", "when", "while", "that", "which", "who", "because", "since", "where",
                      "if", "whenever", "until", "although", "though"}  # fmt: skip
_PHRASE_BOUNDARIES = {"with", "like", "as", "for", "in", "on", "at", "from", "by", "about", "after", "before",
                      "into", "during", "without", "through"}  # fmt: skip
_LEADING_SUBORDINATOR = re.compile(r"^(?:when|once|after|before|since|as soon as|ever since)\s+", re.I)
_DANGLING = {"a", "an", "the", "and", "or", "but", "nor", "so", "to", "of", "for", "with", "at", "in", "on",
             "from", "by", "about", "into", "onto", "than", "like", "as", "that", "which", "who", "whom",
             "whose", "if", "when", "while", "because", "my", "our", "your", "his", "her", "their", "its",
             "called", "named", "titled",
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
# words that cannot be the subject of a fact a memory keeps: pronouns and deictics (what they point at is
# elsewhere), expletives, prepositions and the bare verbs of a dropped subject ("Makes me feel ...")
_NOT_SUBJECTS = frozenset(
    (
        "it it's its this that that's these those they they're they've they'll they'd there there's here here's "
        "he she he's she's everyone everybody everything something nothing someone somebody anyone anything one "
        "what what's which who how why where when such so all both each many most some almost just maybe also "
        "makes made make reminds reminded wish want wants gonna wanna glad started starts for between in on at "
        "with without from to about like as than because if whether and but or not no being having people kids "
        "moments surrounding representing realizing you you're your you've you'll you'd"
    ).split()
)
# a last word after which the statement has not ended: a quantifier, a question word, a particle waiting
# for its object ("look forward"), an object pronoun whose referent is elsewhere ("Caroline chose them")
_TRAILING = frozenset(
    "few several many some any lots bit more most much other every each how what which who whom whose why "
    "where whether if than as like forward from with to of for at in on by about into called named".split()
)
_OBJECT_PRONOUNS = frozenset("it them those these this that him her one ones".split())
_EVALUATIVE = frozenset(
    (
        "great good nice amazing awesome fun wonderful blast special lovely cool same fine okay bad terrible awful "
        "crazy wild incredible fantastic beautiful sweet happy glad excited time times way day night moment "
        "moments experience lot lots much stuff hard tough easy best worst feel feels felt had have has was is "
        "were are be amazed blessed lucky"
    ).split()
)


def words(text: str) -> list[str]:
    return [w.replace("’", "'").lower() for w in _WORD.findall(text)]


_TIME_PREPOSITIONS = frozenset("for by on in at until till since from before after during".split())


def _clean_tail(ws: list[str]) -> list[str]:
    """Drop trailing function words and possessives: a title ends on a content word ("... with Caroline's" →
    "... with" → "...")."""
    while ws and (ws[-1].lower().strip(",") in _DANGLING or ws[-1].lower().endswith(("'s", "’s", "-"))):
        ws = ws[:-1]
    return ws


def strip_dates(text: str) -> str:
    """Text without parenthesised parts and time expressions ("yesterday", "last week", "in May 2023"); a
    quoted title keeps its words ("'Tomorrow, and Tomorrow, and Tomorrow'")."""
    out = _PARENTHESES.sub("", text)
    quoted = [(q.start(), q.end()) for q in _QUOTED.finditer(out)]
    out = _TEMPORAL.sub(lambda m: _drop_time(m, quoted), out)
    return re.sub(r"\s+", " ", out).strip()


def _drop_time(m: re.Match, quoted: list[tuple[int, int]]) -> str:
    # "Last week was wild": the time expression is the subject, the sentence needs it
    if _TIME_AS_SUBJECT.match(m.string, m.end()) or any(a <= m.start() < b for a, b in quoted):
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
    text = _LEADING_PHRASE.sub("", text) if _LEADING_PHRASE.sub("", text).strip() else text
    text = _ATTITUDE.sub("", text)
    text = _APPOSITION.sub(r" \1", text)  # "the user's new manager, Alicia, started" → one noun phrase
    masked = _QUOTED.sub(lambda m: re.sub(r"[,;:!?.]", "_", m.group()), text)  # a quoted title is one unit
    brk = _BREAK.search(masked)
    while brk is not None and len(text[: brk.start()].split()) < 4:  # a break right after the subject
        brk = _BREAK.search(masked, brk.end())
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
            and (ws[i].lower() not in ("and", "or") or (i + 1 < len(ws) and _starts_clause(ws[i + 1])))
            and ws[i - 1].lower() not in ("a", "the")  # "for a while"
        ]
        phrase = [
            i
            for i in range(5, max_words + 1)
            if ws[i].lower() in _PHRASE_BOUNDARIES
            or (ws[i].lower() == "to" and i + 1 < len(ws) and _starts_noun_phrase(ws[i + 1]))
        ]
        if clause or phrase:
            ws = _clean_tail(ws[: clause[0] if clause else phrase[-1]])
        else:
            cut = _clean_tail(ws[:words_target])
            ws = cut if len(cut) >= 3 else ws[:words_target]
    elif truncated:
        ws = _clean_tail(ws) or ws
    elif ws and ws[-1].lower().strip(",") in _TIME_PREPOSITIONS:
        ws = _clean_tail(ws) or ws  # a time taken out left its preposition: "booked a vet visit for"
    return " ".join(ws).strip(" \"'“”‘’`*_.,;:!?-–—")


def _starts_clause(word: str) -> bool:
    """ "and" before this word joins clauses ("... and went home", "... and she"), not the words of one
    noun phrase ("a safe and loving home")."""
    low = word.lower()
    return (
        low in _PRONOUNS or word[:1].isupper() or (low.endswith("ed") and len(low) > 4) or low in _LIGHT_VERBS
    )


def _starts_noun_phrase(word: str) -> bool:
    """ "to" before this word is a preposition ("to an electric car", "to Paris"), not an infinitive."""
    return word.lower() in _DETERMINERS or word[:1].isupper() or word.lower().endswith(("'s", "’s"))


def content_words(title: str) -> list[str]:
    """The words of a title that carry content: not its subject (the first word and a possessive or
    "and others" after it), not pronouns, auxiliaries, prepositions or fillers."""
    ws = words(title)
    if ws[:2] in (["the", "user"], ["the", "assistant"], ["the", "user's"], ["the", "assistant's"]):
        ws = ws[2:]
    elif ws and title[:1].isupper():
        ws = ws[1:]
    if ws[:2] == ["and", "others"]:
        ws = ws[2:]
    content = [w for w in ws if w not in _FUNCTION and not w.isdigit()]
    if _AMOUNT.search(title):
        content.append(_AMOUNT.search(title).group())  # "finished in 1:58:12", "paid $1,249.99": a figure
    return content


def is_theme_title(title: str, concept_type: str) -> bool:
    """A name concept titled by a common noun phrase in lower case ("camping", "pottery class"): a theme a
    person returns to, as against a proper name ("Caroline", "Sweden", "Melanie's kids"). A teacher writes
    themes this way; the memory loop creates one only once it recurs across conversations."""
    return (
        concept_type == "entity"
        and bool(title)
        and title == title.lower()
        and any(c.isalpha() for c in title)
    )


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
    return _statement_shape(title, content)


def _statement_shape(title: str, content: list[str]) -> tuple[str, str] | None:
    """A fact title is a statement about someone or something: a subject that is not a pronoun, a gerund or
    a verb ("It made Caroline realize ...", "Seeing Caroline's mentee's face", "Makes Melanie feel ..."), a
    last word that ends the statement ("Melanie is planning a few", "Caroline chose them") and some content
    beyond an evaluation ("Melanie had a great time", "Melanie feels the same way")."""
    ws = words(title)
    said = ws.index("says") + 1 if "says" in ws[1:3] and len(ws) > ws.index("says") + 1 else 0
    first = ws[said]  # "Caroline says it can be tough": the subject of what was said
    if first in _NOT_SUBJECTS or (len(first) > 5 and first.endswith("ing")):
        return "subjectless_title", f"title {title!r} has no subject a fact can be about ({first!r})"
    last = ws[-1]
    if last in _TRAILING or last in _OBJECT_PRONOUNS:
        return "dangling_title", f"title {title!r} ends before its statement does ({last!r})"
    if all(w in _EVALUATIVE or w in _LIGHT_VERBS for w in content):
        return "vague_title", f"title {title!r} says only how something was, not what"
    return None
