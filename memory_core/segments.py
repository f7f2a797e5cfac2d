"""Segments: the structural units inside one conversation.

A segment is a round (a user turn and the replies that follow it) packed under a token cap; a message
longer than the cap is split at paragraph boundaries (then lines, sentences, spaces, and as a last resort
mid-word). Every segment keeps its message ids and, per piece, the message char span and where that piece
sits in the segment text, so any offset in a segment maps back to a message offset.

Segment ids hash the content, so re-cutting an unchanged conversation reproduces the same ids and a
changed conversation only retires (``superseded_at``) the segments that no longer exist.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert, select, update

from memory_core.ids import sha256_json, stable_uuid
from memory_core.reports import CheckResult, Figures
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import conversations, messages, segments, stage_progress

STAGE = "segments"
DEFAULT_TOKEN_CAP = 256
CHARS_PER_TOKEN = 4
_BOUNDARIES = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"(?<=[.!?…])\s+"), re.compile(r"\s+"))


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def split_spans(text: str, cap_chars: int) -> list[tuple[int, int]]:
    """(start, end) spans covering `text` in order, each at most `cap_chars`, cut at the best boundary."""
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while n - start > cap_chars:
        window_end = start + cap_chars
        cut = None
        for pattern in _BOUNDARIES:
            # the last boundary inside the window, not too close to its start
            last = None
            for m in pattern.finditer(text, start + cap_chars // 4, window_end):
                last = m
            if last is not None:
                cut = last.end() if last.end() <= window_end else last.start()
                break
        if cut is None or cut <= start:
            cut = window_end
        spans.append((start, cut))
        start = cut
    if start < n:
        spans.append((start, n))
    return spans


@dataclass
class MessageRow:
    message_id: str
    parent_id: str | None
    role: str
    author: str
    text: str
    created_at: datetime
    attributes: dict


@dataclass
class SegmentDraft:
    message_ids: list[str]
    message_spans: list[dict]
    text: str
    created_at: datetime
    pieces: list[tuple[str, int, int]] = field(default_factory=list)


def rounds(msgs: list[MessageRow]) -> list[list[MessageRow]]:
    """Split a position-ordered message list into rounds; a jump to another branch starts a new round."""
    out: list[list[MessageRow]] = []
    prev: MessageRow | None = None
    for msg in msgs:
        branch_jump = prev is not None and msg.parent_id is not None and msg.parent_id != prev.message_id
        if not out or msg.role == "user" or branch_jump:
            out.append([msg])
        else:
            out[-1].append(msg)
        prev = msg
    return out


def cut_conversation(msgs: list[MessageRow], token_cap: int = DEFAULT_TOKEN_CAP) -> list[SegmentDraft]:
    cap_chars = max(200, token_cap * CHARS_PER_TOKEN)
    drafts: list[SegmentDraft] = []
    for rnd in rounds(msgs):
        current: SegmentDraft | None = None
        for msg in rnd:
            label = f"{msg.author}: "
            caption = msg.attributes.get("image_caption") if isinstance(msg.attributes, dict) else None
            spans = split_spans(msg.text, cap_chars - len(label))
            for k, (start, end) in enumerate(spans):
                prefix = label if start == 0 else ""
                suffix = f" [image: {caption}]" if caption and k == len(spans) - 1 else ""
                size = len(prefix) + (end - start) + len(suffix)
                if current is not None and len(current.text) + 1 + size > cap_chars:
                    drafts.append(current)
                    current = None
                if current is None:
                    current = SegmentDraft([], [], "", msg.created_at)
                    joiner = ""
                else:
                    joiner = "\n"
                offset = len(current.text) + len(joiner) + len(prefix)
                current.text += joiner + prefix + msg.text[start:end] + suffix
                if msg.message_id not in current.message_ids:
                    current.message_ids.append(msg.message_id)
                current.message_spans.append(
                    {"message_id": msg.message_id, "start": start, "end": end, "offset": offset}
                )
        if current is not None:
            drafts.append(current)
    return drafts


@dataclass
class SegmentReport:
    token_cap: int = DEFAULT_TOKEN_CAP
    conversations_total: int = 0
    conversations_processed: int = 0
    conversations_skipped: int = 0
    segments_new: int = 0
    segments_kept: int = 0
    segments_superseded: int = 0
    segments_current: int = 0
    messages_split: int = 0
    mean_tokens: float = 0.0
    max_tokens: int = 0

    def as_metadata(self) -> Figures:
        return {
            "segments": self.segments_current,
            "segments_new": self.segments_new,
            "segments_kept": self.segments_kept,
            "segments_superseded": self.segments_superseded,
            "conversations_processed": self.conversations_processed,
            "conversations_skipped": self.conversations_skipped,
            "messages_split": self.messages_split,
            "mean_tokens": self.mean_tokens,
            "max_tokens": self.max_tokens,
            "token_cap": self.token_cap,
        }


def _segment_rows(conv_id: str, conv_sha: str, drafts: list[SegmentDraft]) -> list[dict]:
    seen: Counter = Counter()
    rows = []
    for position, d in enumerate(drafts):
        content = sha256_json([d.text, d.message_spans])
        seen[content] += 1
        rows.append(
            dict(
                segment_id=stable_uuid(conv_id, "segment", content, seen[content]),
                conversation_id=conv_id,
                position=position,
                message_ids=d.message_ids,
                start_char=d.message_spans[0]["start"],
                end_char=d.message_spans[-1]["end"],
                message_spans=d.message_spans,
                text=d.text,
                token_estimate=estimate_tokens(d.text),
                created_at=d.created_at,
                conversation_sha256=conv_sha,
                superseded_at=None,
            )
        )
    return rows


def build_segments(store: CorpusStore, token_cap: int = DEFAULT_TOKEN_CAP, batch: int = 200) -> SegmentReport:
    """Cut every conversation whose content changed since the last run; skip the rest."""
    report = SegmentReport(token_cap=token_cap)
    with store.source.connect() as src, store.staging.connect() as stg:
        done = {
            r.conversation_id: r.conversation_sha256
            for r in stg.execute(select(stage_progress).where(stage_progress.c.stage == STAGE))
        }
        todo = []
        for row in src.execute(select(conversations.c.conversation_id, conversations.c.source_sha256)):
            report.conversations_total += 1
            if done.get(row.conversation_id) == row.source_sha256:
                report.conversations_skipped += 1
            else:
                todo.append((row.conversation_id, row.source_sha256))
    for i in range(0, len(todo), batch):
        chunk = todo[i : i + batch]
        by_conv: dict[str, list[MessageRow]] = {cid: [] for cid, _ in chunk}
        with store.source.connect() as src:
            result = src.execute(
                select(
                    messages.c.message_id,
                    messages.c.conversation_id,
                    messages.c.parent_id,
                    messages.c.role,
                    messages.c.author,
                    messages.c.text,
                    messages.c.created_at,
                    messages.c.attributes,
                )
                .where(messages.c.conversation_id.in_(list(by_conv)))
                .order_by(messages.c.conversation_id, messages.c.position)
            )
            for r in result:
                attrs = r.attributes or {}
                if attrs.get("removed_from_source"):
                    continue
                by_conv[r.conversation_id].append(
                    MessageRow(r.message_id, r.parent_id, r.role, r.author, r.text, r.created_at, attrs)
                )
        now = utcnow()
        with store.staging.begin() as stg:
            for conv_id, conv_sha in chunk:
                drafts = cut_conversation(by_conv[conv_id], token_cap)
                report.messages_split += sum(1 for s in drafts for p in s.message_spans if p["start"] > 0)
                rows = _segment_rows(conv_id, conv_sha, drafts)
                current = {
                    r.segment_id
                    for r in stg.execute(
                        select(segments.c.segment_id).where(
                            segments.c.conversation_id == conv_id, segments.c.superseded_at.is_(None)
                        )
                    )
                }
                new_ids = {r["segment_id"] for r in rows}
                fresh = [r for r in rows if r["segment_id"] not in current]
                if fresh:
                    # a segment retired earlier and produced again comes back to life
                    revived = {
                        r.segment_id
                        for r in stg.execute(
                            select(segments.c.segment_id).where(
                                segments.c.segment_id.in_([r["segment_id"] for r in fresh])
                            )
                        )
                    }
                    for r in fresh:
                        if r["segment_id"] in revived:
                            stg.execute(
                                update(segments).where(segments.c.segment_id == r["segment_id"]).values(**r)
                            )
                    inserts = [r for r in fresh if r["segment_id"] not in revived]
                    if inserts:
                        stg.execute(insert(segments), inserts)
                for r in rows:
                    if r["segment_id"] in current:
                        stg.execute(
                            update(segments)
                            .where(segments.c.segment_id == r["segment_id"])
                            .values(position=r["position"], conversation_sha256=conv_sha)
                        )
                retired = current - new_ids
                if retired:
                    stg.execute(
                        update(segments)
                        .where(segments.c.segment_id.in_(list(retired)))
                        .values(superseded_at=now)
                    )
                report.segments_new += len(fresh)
                report.segments_kept += len(rows) - len(fresh)
                report.segments_superseded += len(retired)
                stg.execute(
                    stage_progress.delete().where(
                        stage_progress.c.stage == STAGE, stage_progress.c.conversation_id == conv_id
                    )
                )
                stg.execute(
                    insert(stage_progress),
                    [
                        dict(
                            stage=STAGE,
                            conversation_id=conv_id,
                            conversation_sha256=conv_sha,
                            stats={"segments": len(rows)},
                            finished_at=now,
                        )
                    ],
                )
        report.conversations_processed += len(chunk)
    with store.staging.connect() as stg:
        tokens = [
            r.token_estimate
            for r in stg.execute(select(segments.c.token_estimate).where(segments.c.superseded_at.is_(None)))
        ]
    report.segments_current = len(tokens)
    report.mean_tokens = round(sum(tokens) / len(tokens), 1) if tokens else 0.0
    report.max_tokens = max(tokens, default=0)
    return report


def segments_trace_to_messages(store: CorpusStore) -> CheckResult:
    """Contract of the `segments` stage, its provenance: every live message is covered by a current
    segment and every piece equals its message's text between the offsets."""
    with store.source.connect() as src:
        texts = {
            r.message_id: r.text
            for r in src.execute(select(messages.c.message_id, messages.c.text, messages.c.attributes))
            if not (r.attributes or {}).get("removed_from_source")
        }
    covered: set[str] = set()
    bad = count = 0
    with store.staging.connect() as stg:
        for seg in stg.execute(
            select(segments.c.text, segments.c.message_spans).where(segments.c.superseded_at.is_(None))
        ):
            count += 1
            for span in seg.message_spans:
                covered.add(span["message_id"])
                source = texts.get(span["message_id"])
                piece = seg.text[span["offset"] : span["offset"] + span["end"] - span["start"]]
                if source is None or source[span["start"] : span["end"]] != piece:
                    bad += 1
    uncovered = len(set(texts) - covered)
    return CheckResult(
        uncovered == 0 and bad == 0,
        {"uncovered_messages": uncovered, "bad_spans": bad, "segments": count},
    )
