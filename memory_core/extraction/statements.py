"""What a clause states, for the offline teacher: whose fact it is (its subject) and which concept type it is.

Precision first: a clause is a fact only when it has a subject a memory can keep a fact about —

- `first`: the speaker ("I", "we", "I'm", ...), after at most a leading time or adverb ("Last week I ..."),
- `possessed`: something of the speaker's ("my sister Maya ...", "our build times ..."),
- `named`: a named entity of the message ("Theo spoiled me ...", "Dana is my manager"),
- `definite`: a definite thing in a sentence where the speaker also speaks of themselves ("the rent is
  $2,800, which is way more than I paid") —

never a pronoun or deictic ("It made me realize ...", "These figurines I bought ..."), a gerund ("Seeing my
kids ..."), a dropped subject ("Makes me feel ...") or a generic plural ("Kids are amazingly resilient").

The type rules, in order (`classify_statement`; `tests/test_extraction_offline.py` pins them in a table):

1. a worry or strain of the speaker's own (worried, stressed, stuck, overwhelmed, ...) → tension;
2. a person's role or relationship ("Dana is my new manager", "my sister is Maya") → belief, a standing fact
   (the name itself is an entity whose description says the role);
3. a job change (started / got / quit / left a job, a new role, promoted, hired, laid off) → event;
4. a stated intention (want to, plan to, decided to, thinking about, hope to, need to, would love to) → goal;
5. a plan fixed in time ("I'm flying to Osaka on September 22", "I leave on June 1") → event: it is
   scheduled; a plan without a time ("I'll handle the pastries") → goal;
6. a problem of the speaker's (errors, deadlines, something broken, an argument) → tension;
7. a habit or routine (usually, every Friday, used to, I've been ...ing) → behavioral_pattern;
8. a standing preference or attitude (prefer, would rather, love, hate, can't stand, think, my favourite …)
   → belief;
9. a standing negation ("I no longer use Docker", "I don't cook much anymore") → belief;
10. a simple-present action ("I volunteer at the shelter") → behavioral_pattern;
11. something that happened (past tense, a date, "just got") → event; an ongoing activity ("I'm writing
    articles") → behavioral_pattern; an opinion or self-description → belief.
"""

from __future__ import annotations

import re

from memory_core.extraction.reactions import FEELINGS
from memory_core.extraction.text import (
    ADVERBS,
    FIRST_PERSON,
    MONTHS,
    WEEKDAYS,
    _is_past,
    explicit_date,
    norm_apostrophes,
    words_of,
)

SUBJECTS = {"i", "we", "i'm", "i've", "i'd", "i'll", "we're", "we've", "we'll", "we'd", "im", "ive"}
_STRAIN = re.compile(
    r"\b(worried|worry|worrying|nervous|anxious|stress(?:ed|ful)?|stuck|overwhelm\w*|exhausted|"
    r"(?:i|we)(?:'m| am|'re| are|'ve been| have been| was| were)? (?:\w+ )?struggl(?:e|ed|ing)|"
    r"frustrat\w*|scared|afraid|terrified|lonely|burn(?:ed|t) out|tired of|sick of|fed up|can't sleep|insomnia|"
    r"dread\w*|torn between|concerned|upset|heartbroken|devastated|hard time|can't seem|"
    r"keep (?:running into|getting|having)|(?:it|my \w+|the \w+) keeps \w+ing|barely sleep|"
    r"(?:don't|didn't|can't) get (?:any|enough) sleep)\b"
)
_PROBLEM = re.compile(
    r"\b(problems?|issues?|crash\w*|errors?|bugs?|broken|fail\w*|conflict\w*|haven't heard|still haven't|"
    r"took forever|can't afford|behind on|pressure|argu\w*|fight|fought|disagree\w*|doesn't work|won't work|"
    r"not working|injur\w*|hurts?|pain|deadlines?|debts?|lost my|trouble|troubles|difficult|hard to|tough|"
    r"hospital|spiked|slowed down|timeouts?|outage|leak\w*|regress\w*)\b"
)
_NEGATED = re.compile(r"\b(?:without|no|not|never|don't|didn't|isn't|wasn't|less)\s+(?:\w+\s+)?$")
_CONTRAST = re.compile(r"\b(can't|won't|doesn't|didn't|no time|too (?:much|busy|expensive|far))\b")
_ROLE = re.compile(
    r"^(?:(?:my|our) (?:\w+ ){0,2}(?:is|was|'s) [A-Z]\w+|[A-Z]\w+(?: [A-Z]\w+)? (?:is|was|'s|has been) "
    r"(?:my|our) (?:\w+ ){0,2}\w+|i have (?:a|an|two|three|\w+) (?:\w+ ){0,2}(?:named|called) [A-Z]\w+)",
)
_JOB_CHANGE = re.compile(
    r"\b(?:(?:start|started|starting|begin|began|beginning|got|get|getting|landed|accepted|took|taking|"
    r"quit|quitting|left|leaving|lost|switch\w*|chang\w*)\b[^,;.]{0,30}\b(?:new )?(?:job|role|position|"
    r"internship|gig)\b|promot\w+|(?:got|get|was|been) (?:hired|laid off|fired|let go)|"
    r"retir(?:ed|ing)\b|resign\w*|joined (?:[A-Z]\w+|the company|a startup))",
    re.IGNORECASE,
)
_INTENTION = re.compile(
    r"\b(want to|wanna|want|wants|would like|'d like|'d love to|would love to|"
    r"plans? to (?!(?:the|a|an|my|our|his|her|their)\b)|planning|need (?!to\b)(?:a|an|some|\w+s)\b|"
    r"plan is|hope to|hoping to|aim to|aiming|my goal|goal is|intend\w*|need to|needs to|have to|has to|"
    r"got to|trying to|try to|thinking (?:about|of)|considering|decided to|looking to|looking for|"
    r"dream of|dream is|wish|saving (?:up )?for|keen on|eager to|can't wait to|ready to|determined to|"
    r"working towards?|bucket list|signing up|applying)\b"
)
_FUTURE = re.compile(
    r"\b(will|'ll|going to (?!(?:the|a|an|my|our|his|her|their|this|that|church|school|work|bed|class|boot)\b)|"
    r"gonna|someday|one day)\b"
)
_WHEN_NAMED = re.compile(
    r"\b(?:tomorrow|tonight|next (?:week|weekend|month|year|spring|summer|fall|autumn|winter|"
    + "|".join(WEEKDAYS)
    + r")|this (?:weekend|coming \w+)|on (?:the )?\d{1,2}(?:st|nd|rd|th)?\b|on (?:"
    + "|".join(WEEKDAYS + MONTHS)
    + r")|in (?:"
    + "|".join(MONTHS)
    + r")|in (?:\w+ )?(?:days|weeks|months)\b|(?:"
    + "|".join(MONTHS)
    + r") \d{1,2}\b)"
)
_PATTERN = re.compile(
    r"\b(usually|always|often|normally|typically|generally|regularly|every (?:day|morning|night|evening|week|"
    r"weekend|month|year|other|single|time|sunday|monday|tuesday|wednesday|thursday|friday|saturday)|"
    r"each (?:day|morning|week|month|year)|most (?:days|mornings|nights|evenings|weekends|fridays|mondays)|"
    r"on weekends|daily|weekly|nightly|habit|routine|tend to|used to|(?:once|twice|\w+ times) a (?:day|week|"
    r"month|year)|days a week|\w+s a (?:day|week|month|year)\b|lately|these days|nowadays|all the time|whenever|ve been \w+ing|"
    r"have been \w+ing)\b"
)
_FAVOURITE = re.compile(r"\b(?:my|our) (?:\w+ )?favou?rite\b")  # "my favourite food is ramen these days"
_STANDING_NEGATION = re.compile(r"\b(no longer|anymore|any more|never|not any)\b")
_OPINION = re.compile(
    r"\b(better|worse|best|worst|favou?rite|overrated|underrated|should|shouldn't|important|matters|worth|"
    r"in my (?:view|opinion)|hooked|obsessed|fan of|more than|less than|too (?:expensive|much|little)|way more|"
    r"terrible|awful|prefer|love|hate|can't stand|enjoy|rather)\b"
)
_STATE = re.compile(
    r"^(?:i'm (?:a|an|the|from|based|married|single|vegan|vegetarian|allergic)\b|i am (?:a|an|the|from)\b|"
    r"(?:i|we) (?:\w+ )?(?:have|has|own|live|lives|work as|work at|work for|grew up|come from)\b|"
    r"my \w+(?: \w+)? (?:is|are|was|were|has|have)\b|i'm \w+ years old|"
    r"(?:the|our|my) [\w' ]{2,40} (?:is|are|was|were|costs?|takes?) \w)"
)
_ATTITUDE = {"think", "thought", "believe", "believed", "feel", "felt", "love", "loved", "like", "liked", "prefer",
             "preferred", "hate", "hated", "enjoy", "enjoyed", "adore", "know", "knew", "guess", "suppose",
             "reckon", "find", "dislike", "appreciate", "admire", "miss", "missed", "doubt", "can't", "rather"}  # fmt: skip
_NON_ACTION = {"am", "have", "need", "want", "know", "mean", "guess", "hope", "wish", "agree", "see", "understand",
               "remember", "forget", "wonder", "bet", "promise", "doubt", "recommend", "suggest", "get", "got",
               "do", "don't", "can", "could", "will", "would", "should", "must", "might", "may", "is", "are",
               "appreciate", "say", "tell", "ask", "think", "love", "like", "apologize", "believe", "just", "totally",
               "heard", "hear", "feel", "no", "not", "rather"}  # fmt: skip
AUXILIARIES = {"do", "does", "did", "don't", "didn't", "am", "'m", "have", "'ve", "been", "was", "were", "will", "would",
        "can", "could", "'ll", "'d", "had", "really", "also", "no", "longer"}  # fmt: skip
_OBJECT_STARTS = {"a", "an", "the", "my", "our", "some", "this", "that", "two", "three", "lots", "plenty"}
# the feeling words of the reaction lexicon's phrases, not their function words ("on edge", "over the moon")
_FEELING_WORDS = {w for group in FEELINGS for w in re.findall(r"[a-z]+", group) if len(w) > 3} - {
    "that", "this", "much", "over", "makes", "opening", "plate", "edge", "head", "sense", "moon", "thin",
    "under", "dawned", "struck", "ready", "sure", "lost", "moved"}  # fmt: skip
# what may come before a subject: a time, a frequency, a sentence adverb ("Last weekend my book club ...")
_LEAD = {"last", "next", "this", "past", "coming", "yesterday", "today", "tonight", "tomorrow", "weekend", "week",
         "month", "year", "night", "morning", "afternoon", "evening", "ago", "earlier", "later", "on", "in",
         "back", "then", "now", "so", "still", "even", "once", "few", "couple", "of", "days", "weeks", "months",
         "years", "two", "three", "four", "five", "several", "finally", "every", "each", "most", "weekends",
         "when", "after", "before", "since", "while", "as", "these", "lately", "nowadays", *ADVERBS,
         *WEEKDAYS, *MONTHS}  # fmt: skip
# a simple-present verb of how things stand ("we run Postgres on RDS", "we use ArgoCD"), not a habit
_STATE_VERBS = {"use", "run", "store", "host", "own", "rent", "keep", "live", "work", "have"}
# a wish that something were otherwise ("I wish I had your energy") is no goal
_COUNTERFACTUAL = re.compile(r"\bwish (?:i|we) (?:had|was|were|knew|could have|'d)\b")


def main_verb(ws: list[str]) -> tuple[str, set[str]]:
    """The first verb after a first-person subject near the start of the clause ("Every Sunday I meal-prep"),
    and the auxiliaries seen on the way. ("", set()) when the first person is subordinate ("the rent is more
    than I paid")."""
    for i, w in enumerate(ws[:4]):
        if w in SUBJECTS:
            aux = {w.split("'")[1]} if "'" in w else set()
            following = ws[i + 1 : i + 6]
            for j, nxt in enumerate(following):
                if nxt in ADVERBS or nxt in AUXILIARIES:
                    if nxt in AUXILIARIES:
                        if j + 1 < len(following) and following[j + 1] in _OBJECT_STARTS:
                            return nxt, aux  # "we did a day trip", "I had a blast": the verb itself
                        aux.add(nxt)
                    continue
                return nxt, aux
            return "", aux
    return "", set()


def clause_subject(clause: str, names: set[str], speaker_context: bool) -> str | None:
    """Whose fact the clause states (see the module docstring): `first`, `possessed`, `named`, `definite`,
    or None. `names`: the entity names found in the message; `speaker_context`: the sentence also has a
    clause in the first person."""
    tokens = re.findall(r"[^\W_][\w'’&+\-]*", clause)
    ws = [norm_apostrophes(t).lower() for t in tokens]
    i = 0
    while i < min(len(ws), 5) and ws[i] in _LEAD and ws[i] not in SUBJECTS:
        i += 1
    if i < len(ws) and ws[i] in {"a", "an"} and i + 2 < len(ws) and ws[i + 2] == "ago":
        i += 3  # "a few weeks ago I ..."
    if i >= len(ws):
        return None
    w = ws[i]
    if w in SUBJECTS:
        return "first"
    if w in {"my", "our"}:
        return "possessed"
    if tokens[i][:1].isupper() and any(n.split()[0] == tokens[i] for n in names):
        return "named"
    vague = {"same", "way", "lot", "lot's", "few", "bit", "little", "couple", "thing", "things"}
    if w in {"the", "a", "an"} and speaker_context and i + 1 < len(ws) and ws[i + 1] not in vague:
        return "definite"
    return None


def _strain(low: str) -> bool:
    return any(not _NEGATED.search(low[max(0, m.start() - 12) : m.start()]) for m in _STRAIN.finditer(low))


def _problem(low: str) -> bool:
    return any(not _NEGATED.search(low[max(0, m.start() - 12) : m.start()]) for m in _PROBLEM.finditer(low))


def classify_statement(clause: str, connector: str, subject: str) -> tuple[str | None, float]:
    """(concept type, confidence) of a clause whose subject is `subject` (`clause_subject`), or (None, 0)
    when it states nothing durable. The rules are the module docstring's, in its order."""
    low = norm_apostrophes(clause).lower()
    ws = words_of(clause)
    if subject in ("named", "definite"):
        return _classify_other(clause, low, ws)
    verb, aux = main_verb(ws)
    if _strain(low) or (connector == "but" and _CONTRAST.search(low)):
        return "tension", 0.7
    if (
        connector == "but"
        and subject == "possessed"
        and re.search(r"\b(?:wants?|insists?|says?|keeps?)\b", low)
    ):
        return "tension", 0.6  # "..., but my manager wants everyone back in the office"
    if _ROLE.search(norm_apostrophes(clause)) or re.match(
        r"^(?:my|our) (?:\w+ ){0,2}(?:is|was) [A-Z]", clause
    ):
        return "belief", 0.6
    if _JOB_CHANGE.search(clause) and not _INTENTION.search(low):
        return "event", 0.65
    if _COUNTERFACTUAL.search(low):
        return None, 0.0
    if _INTENTION.search(low):
        return "goal", 0.7
    if _FUTURE.search(low) or (_WHEN_NAMED.search(low) and (verb.endswith("ing") or not _is_past(verb))):
        if _WHEN_NAMED.search(low) and not _PATTERN.search(low):
            return "event", 0.6  # scheduled: "I'm flying to Osaka on September 22", "I leave on June 1"
        if _FUTURE.search(low):
            return "goal", 0.65
    if _problem(low):
        return "tension", 0.6
    if verb in _ATTITUDE or low.startswith(("i don't like", "i do not like")) or _FAVOURITE.search(low):
        return "belief", 0.65  # "I always thought ..." is an attitude, not a habit
    if _PATTERN.search(low):
        return "behavioral_pattern", 0.65
    if _STANDING_NEGATION.search(low):
        return "belief", 0.6
    if verb in _STATE_VERBS and not aux:
        return "belief", 0.55
    if verb and not aux and not _is_past(verb) and not verb.endswith("ing") and verb not in _NON_ACTION:
        if verb.isalpha():
            return "behavioral_pattern", 0.5
    # after "I'm" an -ed word is a state ("I'm confused", "I'm hooked"), not something that happened
    stative = bool(aux & {"m", "'m", "am", "re", "'re"})
    past = (_is_past(verb) and not stative) or bool(aux & {"did", "was", "were", "had"})
    past = past or ("been" in aux and not verb.endswith("ing"))  # "I'd been to Paris", "I've been there"
    if subject == "possessed":  # "my doctor said ...": the verb follows a short noun phrase
        past = past or any(_is_past(w) for w in ws[1:5])
    if past or explicit_date(low) or re.search(r"\b(just got|recently)\b", low):
        return "event", 0.6
    if stative and verb.endswith("ing") and verb.isalpha() and not _FEELING_WORDS & set(ws):
        return "behavioral_pattern", 0.5  # an ongoing activity: "I'm writing articles about fantasy novels"
    if _OPINION.search(low) or _STATE.search(low):
        return "belief", 0.55
    return None, 0.0


def _classify_other(clause: str, low: str, ws: list[str]) -> tuple[str | None, float]:
    """A fact about a named or definite thing of the speaker's world: a role, a strain or problem, something
    that happened, a state ("Lena does the sourdough", "the rent is $2,800")."""
    if _ROLE.search(norm_apostrophes(clause)):
        return "belief", 0.55
    if _strain(low) or _problem(low):
        return "tension", 0.45
    if any(_is_past(w) for w in ws[1:5]) or explicit_date(low):
        return "event", 0.45
    if _PATTERN.search(low):
        return "behavioral_pattern", 0.45
    if re.search(r"\b(?:is|are|does|do|runs?|costs?|takes?|has|have|works?)\b", low):
        return "belief", 0.45 if set(ws) & FIRST_PERSON else 0.4
    return None, 0.0
