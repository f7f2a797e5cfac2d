"""Is a piece of evidence still what its source says? The one rule the claims and the concept evidence share.

Evidence was read at [span_start, span_end) of a message inside a segment. Now:
- the message is gone or was removed from the input → **rejected** (its source no longer says it);
- the message's text at the span differs (an edited message) → **rejected**;
- the text still reads the same but the segment it was read in was re-cut (its conversation changed
  around it) → **stale**: the grounding is uncertain until it is re-attached to the current segment;
- else **active**.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from memory_core.store.db import CorpusStore
from memory_core.store.schema import messages, segments

_CHUNK = 500


@dataclass(frozen=True)
class SourceMessage:
    text: str
    author: str
    role: str
    created_at: object
    attributes: dict

    @property
    def removed(self) -> str:
        return str(self.attributes.get("removed_from_source") or "")

    @property
    def on_active_branch(self) -> bool:
        return self.attributes.get("on_active_branch", True) is not False


def grounding(
    message: SourceMessage | None, span_start: int, span_end: int, surface: str, segment_current: bool
) -> tuple[str, str]:
    """(status, reason): active / stale / rejected, with why (reason "" when active)."""
    if message is None:
        return "rejected", "source message no longer exists"
    if message.removed:
        return "rejected", f"source message removed from the input ({message.removed[:19]})"
    if message.text[span_start:span_end] != surface:
        return "rejected", f"source message edited: the span no longer reads {surface[:80]!r}"
    if not segment_current:
        return "stale", "its segment was re-cut after the conversation changed; the span still reads the same"
    return "active", ""


def source_messages(store: CorpusStore, ids: Iterable[str]) -> dict[str, SourceMessage]:
    wanted = sorted(set(ids))
    out: dict[str, SourceMessage] = {}
    m = messages.c
    with store.source.connect() as conn:
        for i in range(0, len(wanted), _CHUNK):
            for r in conn.execute(
                select(m.message_id, m.text, m.author, m.role, m.created_at, m.attributes).where(
                    m.message_id.in_(wanted[i : i + _CHUNK])
                )
            ):
                out[r.message_id] = SourceMessage(r.text, r.author, r.role, r.created_at, r.attributes or {})
    return out


def current_segment_ids(store: CorpusStore) -> set[str]:
    with store.staging.connect() as conn:
        return set(
            conn.execute(select(segments.c.segment_id).where(segments.c.superseded_at.is_(None))).scalars()
        )
