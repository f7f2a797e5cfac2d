"""Gold sets the project wrote itself (no benchmark data): annotated messages for scoring extraction."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

GOLD_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class GoldMention:
    type: str
    text: str
    start: int
    end: int
    title: str = ""  # a fact's canonical title as an ideal teacher gives it ("" when not annotated)


@dataclass(frozen=True)
class GoldMessage:
    id: str
    style: str  # chatgpt | longmemeval | locomo
    role: str
    author: str
    created_at: datetime
    text: str
    mentions: tuple[GoldMention, ...]
    reaction: str | None


def load_extraction_gold(path: Path | None = None) -> list[GoldMessage]:
    doc = json.loads((path or GOLD_DIR / "extraction_gold.json").read_text(encoding="utf-8"))
    out = []
    for m in doc["messages"]:
        mentions = []
        for g in m["mentions"]:
            start = m["text"].index(g["text"])  # annotated spans are unique in their message (a test checks)
            mentions.append(
                GoldMention(g["type"], g["text"], start, start + len(g["text"]), g.get("title", ""))
            )
        out.append(
            GoldMessage(
                id=m["id"],
                style=m["style"],
                role=m["role"],
                author=m["author"],
                created_at=datetime.fromisoformat(m["created_at"]),
                text=m["text"],
                mentions=tuple(mentions),
                reaction=m["reaction"],
            )
        )
    return out
