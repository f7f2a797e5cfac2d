"""What the Scout finds: candidates (messages a tool returned, with the strategy and sub-question that found
them) and, once submitted, evidence (the message's text, the span that answers its sub-question, why it
was taken). The order evidence is submitted in is the agent's ranking (`compose`): a comparison's parts
interleaved so both are kept, a count's conversations one by one so the top is not one session.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime

from memory_core.lexical import tokenize

# a sentence ends at . ! ? followed by white space (not inside "1.5 km" or "e.g.x"), or at a line break
_SENTENCE = re.compile(r"(?:[^\n.!?]|[.!?](?![.!?]*(?:\s|$)))+[.!?]*")


@dataclass
class Candidate:
    message_id: str
    conversation_id: str
    time: datetime
    snippet: str
    score: float
    paths: list[str]
    sub: int  # the sub-question it was found for
    strategy: str  # the strategy that found it ("search", "search in range", "enter by concept …")
    rank: float  # its position in that strategy's result (1 = first; a walked neighbour follows its origin)
    grounded: bool  # its snippet holds some of the sub-question's words
    strategy_ok: bool = True  # the call that found it found the sub-question's words at all
    how: str = ""  # how it was reached, when not by the strategy's own result ("NEXT after …")
    # it states a fact the question asks about that memory holds as no longer current (superseded, ended)
    replaced: bool = False

    @property
    def why(self) -> str:
        via = f" via {', '.join(self.paths)}" if self.paths else ""
        return self.how or f"{self.strategy}: rank {int(self.rank)}{via}"


@dataclass
class Evidence:
    """A submitted message as the Synthesizer sees it: its original text and where it answers."""

    message_id: str
    conversation_id: str
    conversation_ref: str
    source_ref: str
    author: str
    role: str
    created_at: datetime
    text: str
    span_start: int  # the sentence that best answers its sub-question
    span_end: int
    match: float  # share of its sub-question's words the span holds
    sub: int
    sub_label: str
    why: str
    concept_ids: list[str] = field(default_factory=list)  # concepts this message is evidence for
    replaced: bool = False  # it states an asked fact memory holds as no longer current

    @property
    def citation(self) -> str:
        return f"[Source:{self.message_id}]"

    @property
    def quote(self) -> str:
        return self.text[self.span_start : self.span_end].strip()

    def as_dict(self) -> dict:
        d = asdict(self)
        d["created_at"] = self.created_at.isoformat()
        d["citation"] = self.citation
        d["quote"] = self.quote
        return d


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of `text` (whitespace trimmed)."""
    out = []
    for m in _SENTENCE.finditer(text):
        start, end = m.start(), m.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out or [(0, len(text))]


def best_sentence(text: str, wanted: set[str]) -> tuple[int, int, float]:
    """The sentence of `text` holding most of the `wanted` stems: (start, end, share of them it holds)."""
    best = (0, min(len(text), 300), 0.0)
    for start, end in sentences(text):
        got = wanted & set(tokenize(text[start:end]))
        share = len(got) / len(wanted) if wanted else 0.0
        if share > best[2]:
            best = (start, end, share)
    return best


def _interleave(groups: list[list[Candidate]]) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[str] = set()
    for i in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if i < len(group) and group[i].message_id not in seen:
                seen.add(group[i].message_id)
                out.append(group[i])
    return out


def _by_conversation(candidates: list[Candidate]) -> list[Candidate]:
    """Round robin over conversations in order of their best candidate: each session's best first."""
    per: dict[str, list[Candidate]] = {}
    for c in candidates:
        per.setdefault(c.conversation_id, []).append(c)
    return _interleave(list(per.values()))


def compose(candidates: list[Candidate], intent: str, n_subs: int) -> list[Candidate]:
    """The agent's ranking of what the Scout saw: per sub-question the results of its strategies
    interleaved, those that found its words before those that did not; the sub-questions interleaved (a
    comparison keeps both parts); a count then ranks conversation by conversation."""
    per_sub: list[list[Candidate]] = []
    for sub in range(n_subs):
        mine = [c for c in candidates if c.sub == sub]
        strategies = list(dict.fromkeys(c.strategy for c in mine))
        groups = [[c for c in mine if c.strategy == s] for s in strategies]
        groups.sort(key=lambda g: not g[0].strategy_ok)  # stable: tried order within each kind
        per_sub.append(_interleave([sorted(g, key=lambda c: c.rank) for g in groups]))
    ranked = _interleave(per_sub)
    return _by_conversation(ranked) if intent == "count" else ranked
