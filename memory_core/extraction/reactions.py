"""Lexicon-based UserReaction classifier of the offline teacher.

`explicit` when the speaker names a feeling about themselves ("I'm so frustrated", "I feel exhausted",
"this makes me nervous"); `inferred` when the state is read from other cues ("ugh, it still crashes",
"I've decided to ..."). A named feeling outside the 12-state vocabulary is `Other` with the word in
`state_raw`. Negated feelings ("not worried") are skipped. The cue is always a verbatim span of the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# feeling word (regex) → state; order matters only for overlapping stems
FEELINGS: dict[str, str] = {
    r"frustrat\w*|annoyed|annoying|irritated|fed up|pissed( off)?|aggravated|angry|mad at|upset": "Frustration",
    r"anxious|anxiety|nervous|worried|worry|worrying|scared|afraid|stressed( out)?|uneasy|panick\w*|dreading|"
    r"terrified|on edge|concerned": "Anxiety",
    r"exhausted|tired|drained|burn(ed|t) out|worn out|sleepy|fatigued|wiped out|knackered": "Exhaustion",
    r"overwhelmed|swamped|snowed under|in over my head|stretched thin|too much on my plate": "Overwhelmed",
    r"confused|confusing|puzzled|lost|baffled|perplexed|unsure|not sure": "Confusion",
    r"inspired|inspiring|moved|awe(d|struck)?": "Inspiration",
    r"determined|committed|motivated|resolved|ready to (go|do this)|pumped": "Determination",
    r"happy|glad|thrilled|excited|delighted|joyful|overjoyed|ecstatic|stoked|proud|grateful|thankful|"
    r"relieved|blessed|elated|cheerful|content|over the moon|amazing|awesome|fantastic|wonderful|exciting|"
    r"thrilling|delightful": "Joy",
    r"clear now|makes sense now|that makes sense|clearer|enlightened": "Clarity",
    r"realized|realised|it dawned on me|epiphany|eye-opening|eye opening": "Insight",
    r"calm|fine|okay|ok|alright|neutral|indifferent": "Neutral",
    r"sad|lonely|nostalgic|bored|guilty|embarrassed|ashamed|disappointed|heartbroken|homesick|jealous|"
    r"hopeful|bittersweet|miserable|gloomy|melancholy|envious|insecure": "Other",
}
_POSITIVE = {"Clarity", "Inspiration", "Joy", "Determination", "Insight"}
_NEGATIVE = {"Frustration", "Anxiety", "Exhaustion", "Confusion", "Overwhelmed"}
_OTHER_VALENCE = {
    "hopeful": "positive",
    "nostalgic": "ambiguous",
    "bittersweet": "ambiguous",
}

_SELF = (
    r"(?:\bI(?:'m|’m| am| was| feel| felt| get| got| have been| 've been|’ve been| been| keep feeling| 'm feeling|’m feeling)"
    r"|\bI'm|\bI’m|\bfeeling|\bfeel|\bmakes? me(?: feel)?|\bmade me(?: feel)?|\bleft me|\bgot me)"
)
_INTENSIFIERS = (
    r"(?:\s+(?:so|really|very|super|extremely|incredibly|totally|quite|pretty|a bit|a little|kind of|kinda|"
    r"sort of|somewhat|slightly|honestly|just|absolutely|completely|utterly|beyond|more|most|getting|becoming))*"
)
_STRONG = {
    "so",
    "really",
    "very",
    "super",
    "extremely",
    "incredibly",
    "totally",
    "absolutely",
    "completely",
    "utterly",
    "beyond",
}
_WEAK = {"a bit", "a little", "kind of", "kinda", "sort of", "somewhat", "slightly"}
_NEGATION = re.compile(r"\b(not|n't|never|no longer|hardly)\b[\w\s]{0,12}$", re.IGNORECASE)

_EXPLICIT = [
    (re.compile(_SELF + _INTENSIFIERS + r"\s+(?P<w>" + words + r")\b", re.IGNORECASE), state)
    for words, state in FEELINGS.items()
]
_BARE = [
    (re.compile(r"\b(?P<w>" + words + r")\b", re.IGNORECASE), state) for words, state in FEELINGS.items()
]
# inferred from behaviour rather than a named feeling
_INFERRED_CUES: list[tuple[re.Pattern, str]] = [
    (
        re.compile(
            r"\b(ugh+|argh+|grr+|ffs|still (?:doesn't|does not|won't|isn't) work\w*|keeps? (?:crashing|failing|breaking))\b",
            re.I,
        ),
        "Frustration",
    ),
    (
        re.compile(
            r"\b(I(?:'ve|’ve| have)? (?:finally )?decided to|I'm going to make (?:it|this) work|no matter what|I won't give up)\b",
            re.I,
        ),
        "Determination",
    ),
    (
        re.compile(r"\b(I don't (?:get|understand)|what does .{1,40} mean|I can't figure out)\b", re.I),
        "Confusion",
    ),
    (re.compile(r"\b(now I (?:get|understand|see)|got it,|oh,? I see)\b", re.I), "Clarity"),
    (re.compile(r"\b(can't wait|so much fun|had a blast|love(?:d)? it|best day)\b", re.I), "Joy"),
    (re.compile(r"\b(too much going on|can't keep up|no time for anything|juggling)\b", re.I), "Overwhelmed"),
    (
        re.compile(
            r"\b(didn't sleep|no sleep|barely slept|long day|trouble sleeping|can't sleep|insomnia)\b", re.I
        ),
        "Exhaustion",
    ),
    (
        re.compile(
            r"\b(I got (?:accepted|promoted|engaged|the job)|guess what|great news|good news)\b", re.I
        ),
        "Joy",
    ),
]
# context words that make an adjective about something else ("an awesome painting"), not the speaker
_AMBIGUOUS_BARE = {"amazing", "awesome", "fantastic", "wonderful", "fine", "okay", "ok", "alright", "calm", "content",
                   "lost", "moved", "clearer", "concerned", "mad at", "upset", "angry", "tired"}  # fmt: skip


@dataclass(frozen=True)
class ReactionSignal:
    state: str
    state_raw: str
    intensity: float
    valence: str
    epistemic_status: str
    cue_start: int
    cue_end: int


def _intensity(phrase: str, text_after: str, explicit: bool) -> float:
    low = phrase.lower()
    value = 0.6 if explicit else 0.45
    if any(re.search(rf"\b{w}\b", low) for w in _STRONG):
        value += 0.2
    if any(w in low for w in _WEAK):
        value -= 0.25
    if text_after.startswith("!"):
        value += 0.1
    return round(min(1.0, max(0.1, value)), 2)


def _valence(state: str, raw: str) -> str:
    if state in _POSITIVE:
        return "positive"
    if state in _NEGATIVE:
        return "negative"
    if state == "Neutral":
        return "neutral"
    return _OTHER_VALENCE.get(raw.lower(), "negative")


def classify_reactions(
    text: str, start: int = 0, end: int | None = None, limit: int = 2
) -> list[ReactionSignal]:
    """The speaker's states shown in text[start:end], strongest (explicit) first, one per state."""
    end = len(text) if end is None else end
    piece = text[start:end]
    found: dict[str, ReactionSignal] = {}

    def add(state: str, raw: str, m_start: int, m_end: int, explicit: bool, phrase: str) -> None:
        if state in found and (found[state].epistemic_status == "explicit" or not explicit):
            return
        if _NEGATION.search(piece[max(0, m_start - 24) : m_start]):
            return
        after = piece[m_end : m_end + 1]
        found[state] = ReactionSignal(
            state=state,
            state_raw=raw.lower() if state == "Other" else "",
            intensity=_intensity(phrase, after, explicit),
            valence=_valence(state, raw),
            epistemic_status="explicit" if explicit else "inferred",
            cue_start=start + m_start,
            cue_end=start + m_end,
        )

    for pattern, state in _EXPLICIT:
        for m in pattern.finditer(piece):
            word = m.group("w")
            negation_window = piece[m.start() : m.start("w")]
            if re.search(r"\b(not|n't|never|no longer)\b", negation_window, re.I):
                continue
            add(state, word, m.start(), m.end(), True, m.group())
    for pattern, state in _INFERRED_CUES:
        for m in pattern.finditer(piece):
            add(state, m.group(), m.start(), m.end(), False, m.group())
    for pattern, state in _BARE:
        for m in pattern.finditer(piece):
            word = m.group("w").lower()
            if word in _AMBIGUOUS_BARE or state == "Neutral":
                continue
            add(state, word, m.start("w"), m.end("w"), False, m.group())
    ranked = sorted(
        found.values(), key=lambda r: (r.epistemic_status != "explicit", -r.intensity, r.cue_start)
    )
    return ranked[:limit]
