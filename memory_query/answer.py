"""A cited answer without an LLM: the evidence sentences that best match the question, each with its
citation. (An LLM synthesizer, when configured, must meet the same citation rule.)"""

from __future__ import annotations

import re

from memory_core.lexical import tokenize
from memory_query.evidence import MemoryAnswer

_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def extractive_answer(answer: MemoryAnswer, max_sentences: int = 2) -> str:
    """Quote the best-matching sentence of the top evidence messages, one cited sentence each."""
    wanted = set(tokenize(answer.question))
    lines = []
    for item in answer.items[: max_sentences * 2]:
        sentences = [s for s in _SENTENCES.split(item.text) if s.strip()] or [item.text]
        best = max(sentences, key=lambda s: len(wanted & set(tokenize(s))))
        quote = best.strip().replace('"', "'")
        lines.append(f'{item.author} ({item.created_at:%Y-%m-%d}): "{quote}" {item.citation}.')
        if len(lines) == max_sentences:
            break
    return "\n".join(lines) if lines else "Memory holds nothing on this."
