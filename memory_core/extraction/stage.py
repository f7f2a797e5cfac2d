"""The extraction stage over a corpus: incremental per conversation, resumable, idempotent.

- A conversation is skipped when `stage_progress` says this extractor finished its current segmentation
  (same content hash) with nothing pending.
- Inside a conversation to do, only segments without a `done` row in `segment_extractions` for this
  extractor are sent to the teacher: a changed conversation re-extracts only its new segments.
- LLM answers are cached (by the client) before they are used and every call is accounted in `llm_calls` as
  soon as it returns; the conversation's mentions, residuals, segment rows and progress are then written in
  one staging transaction (reactions just before, in the reflective store, by deterministic id). A run
  killed at any point resumes from the cache: no repeated LLM calls, no duplicates, nothing lost.
- One current extraction per segment: a segment answered by this teacher stops holding another teacher's
  mentions, reactions and evidence (`current.py`). Reflective mentions (a person's feelings) never enter
  the concept layer, and no reaction is written on a message whose reactions were purged
  (`reflective.py`).
- A transient LLM failure (429/5xx/timeouts after retries) or an invalid answer (two schema violations in
  a row: chance, not a verdict) leaves the segment `pending` with a residual saying why; the next run
  retries it (invalid answers are not cached). Refusals are final, a residual too.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select

from memory_core.extraction.current import supersede_other_extractions
from memory_core.extraction.mapper import STAGE as RESIDUAL_STAGE
from memory_core.extraction.mapper import MappedSegment, map_extraction
from memory_core.extraction.reflective import (
    drop_tombstoned,
    tombstoned,
    withhold_reflective,
)
from memory_core.extraction.reflective_purge import expire_reactions
from memory_core.extraction.report import ExtractionReport
from memory_core.extraction.teacher import (
    MessageView,
    SegmentInput,
    Teacher,
    TeacherResult,
    speaker_is_person,
)
from memory_core.llm.accounting import call_row, record_calls
from memory_core.llm.base import LLMConfigurationError
from memory_core.llm.cache import ResponseCache
from memory_core.ontology.extraction import ReactionCandidate
from memory_core.progress import Progress
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import (
    conversations,
    mentions,
    messages,
    residuals,
    segment_extractions,
    segments,
    stage_progress,
    user_reactions,
)

STAGE = "mentions"  # stage_progress key
CALL_STAGE = "extraction"  # llm_calls.stage
SEGMENTS_STAGE = "segments"


def _reaction_item_validity(raw: str) -> tuple[int, int]:
    """(proposed, schema-valid) reaction items of an answer that failed as a whole."""
    try:
        items = json.loads(raw).get("reactions", [])
    except (ValueError, AttributeError):
        return 0, 0
    if not isinstance(items, list):
        return 0, 0
    valid = 0
    for item in items:
        try:
            ReactionCandidate.model_validate(item)
            valid += 1
        except ValueError:
            pass  # counted as invalid: the figure is the point
    return len(items), valid


class _Conversation:
    """What the stage needs of one conversation: its current segments as teacher inputs."""

    def __init__(
        self, store: CorpusStore, conversation_id: str, source_format: str, speakers: tuple[str, ...]
    ):
        self.id = conversation_id
        with store.staging.connect() as stg:
            self.segments = [
                dict(r)
                for r in stg.execute(
                    select(segments.c.segment_id, segments.c.message_ids, segments.c.message_spans)
                    .where(segments.c.conversation_id == conversation_id, segments.c.superseded_at.is_(None))
                    .order_by(segments.c.position)
                ).mappings()
            ]
        with store.source.connect() as src:
            self.messages = {
                r.message_id: r
                for r in src.execute(
                    select(
                        messages.c.message_id,
                        messages.c.role,
                        messages.c.author,
                        messages.c.text,
                        messages.c.created_at,
                        messages.c.attributes,
                    ).where(messages.c.conversation_id == conversation_id)
                )
            }
        self.source_format = source_format
        people = {m.author for m in self.messages.values() if speaker_is_person(m.role, source_format)}
        self.speakers = tuple(
            sorted(
                {s for s in speakers if s}
                | {p for p in people if p and p.lower() not in {"user", "assistant"}}
            )
        )

    def inputs(self, segment_ids: set[str]) -> list[SegmentInput]:
        out = []
        previous: tuple[MessageView, ...] = ()
        for seg in self.segments:
            views = self._views(seg)
            if seg["segment_id"] in segment_ids:
                out.append(
                    SegmentInput(
                        seg["segment_id"], self.id, self.source_format, views, self.speakers, previous
                    )
                )
            previous = views
        return out

    def _views(self, seg: dict) -> tuple[MessageView, ...]:
        bounds: dict[str, list[int]] = {}
        for piece in seg["message_spans"]:
            b = bounds.setdefault(piece["message_id"], [piece["start"], piece["end"]])
            b[0], b[1] = min(b[0], piece["start"]), max(b[1], piece["end"])
        views = []
        for n, mid in enumerate(seg["message_ids"], start=1):
            m = self.messages[mid]
            start, end = bounds.get(mid, (0, len(m.text)))
            views.append(
                MessageView(
                    f"m{n}",
                    mid,
                    m.role,
                    m.author,
                    speaker_is_person(m.role, self.source_format),
                    m.text,
                    start,
                    end,
                    m.created_at,
                    _caption(m.attributes) if end == len(m.text) else "",  # on the message's last piece
                )
            )
        return tuple(views)


def _caption(attributes: dict | None) -> str:
    caption = (attributes or {}).get("image_caption") if isinstance(attributes, dict) else None
    return str(caption) if caption else ""


def _safe_extract(teacher: Teacher, segment: SegmentInput) -> TeacherResult:
    try:
        return teacher.extract(segment)
    except LLMConfigurationError:
        raise
    except Exception as exc:  # a teacher bug on odd input must not stop the corpus: recorded as a residual
        return TeacherResult(None, "error", f"teacher raised {type(exc).__name__}: {exc}"[:1000])


def extract_corpus(
    store: CorpusStore,
    teacher: Teacher,
    *,
    parallel: int = 1,
    retention_days: float | None = None,
    log: Callable[[str], None] | None = None,
    cache: ResponseCache | None = None,
) -> ExtractionReport:
    started = time.perf_counter()
    report = ExtractionReport(
        teacher=teacher.describe(), extractor=teacher.extractor, retention_days=retention_days
    )
    with store.staging.connect() as stg:
        cut = {
            r.conversation_id: r.conversation_sha256
            for r in stg.execute(select(stage_progress).where(stage_progress.c.stage == SEGMENTS_STAGE))
        }
        done = {
            r.conversation_id: r
            for r in stg.execute(select(stage_progress).where(stage_progress.c.stage == STAGE))
        }
    with store.source.connect() as src:
        meta = {
            r.conversation_id: r
            for r in src.execute(
                select(
                    conversations.c.conversation_id, conversations.c.source_format, conversations.c.attributes
                )
            )
        }
    todo = []
    for conv_id, sha in sorted(cut.items()):
        report.conversations_total += 1
        prev = done.get(conv_id)
        if (
            prev is not None
            and prev.conversation_sha256 == sha
            and (prev.stats or {}).get("extractor") == teacher.extractor
            and not (prev.stats or {}).get("pending")
        ):
            report.conversations_skipped += 1
        else:
            todo.append((conv_id, sha))
    pool = ThreadPoolExecutor(max_workers=parallel) if teacher.uses_llm and parallel > 1 else None
    purged = tombstoned(store) if todo else set()
    progress = Progress("extraction", "conversations extracted", len(todo))
    try:
        for n, (conv_id, sha) in enumerate(todo, start=1):
            row = meta.get(conv_id)
            attrs = (row.attributes or {}) if row is not None else {}
            speakers = tuple(s for s in attrs.get("speakers") or () if isinstance(s, str))
            conv = _Conversation(store, conv_id, row.source_format if row is not None else "", speakers)
            _process(store, teacher, conv, sha, report, pool, retention_days, purged)
            progress.step()
            if log and (n % 50 == 0 or n == len(todo)):
                log(
                    f"extraction: {n}/{len(todo)} conversations, {report.mentions_written} mentions, {report.calls} LLM calls"
                )
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    progress.finish()
    # retention purges as a purge does: the answers in `cache` (the LLM cache) that held them are redacted
    report.reactions_expired = expire_reactions(store, cache)
    report.reading = teacher.reading_figures()
    report.seconds = time.perf_counter() - started
    return report


def _process(
    store, teacher, conv: _Conversation, sha: str, report: ExtractionReport, pool, retention_days, purged
) -> None:
    seg_ids = {s["segment_id"] for s in conv.segments}
    with store.staging.connect() as stg:
        finished = {
            r.segment_id
            for r in stg.execute(
                select(segment_extractions.c.segment_id).where(
                    segment_extractions.c.conversation_id == conv.id,
                    segment_extractions.c.extractor == teacher.extractor,
                    segment_extractions.c.status == "done",
                )
            )
            if r.segment_id in seg_ids
        }
    need = seg_ids - finished
    report.segments_reused += len(finished)
    inputs = conv.inputs(need)
    teacher.prepare(inputs)
    results: dict[str, TeacherResult] = {}
    if pool is None:
        pairs = ((s, _safe_extract(teacher, s)) for s in inputs)
    else:
        futures = {pool.submit(_safe_extract, teacher, s): s for s in inputs}
        pairs = ((futures[f], f.result()) for f in as_completed(futures))
    for segment, result in pairs:
        results[segment.segment_id] = result
        if result.call is not None:  # accounted at once: a crash later still shows the spend
            record_calls(store.staging, [call_row(result.call, CALL_STAGE, segment.segment_id)])
            c = result.call
            report.calls += 1
            report.cache_hits += int(c.cache_hit)
            report.attempts += c.attempts
            report.tokens_in += c.tokens_in
            report.tokens_out += c.tokens_out
            report.cost_usd = round(report.cost_usd + c.cost_usd, 8)
    now = utcnow()
    mention_rows: list[dict] = []
    reaction_rows: list[dict] = []
    residual_rows: list[dict] = []
    seg_rows: list[dict] = []
    pending = 0
    for segment in inputs:
        result = results[segment.segment_id]
        # schema validity counts answers (valid or not); refusals and unavailability are not answers
        report.responses += int(result.outcome in ("ok", "invalid"))
        stats: Counter = Counter()
        if result.extraction is not None:
            report.responses_valid += 1
            mapped = map_extraction(segment, result.extraction, teacher.extractor, now)
            stats.update(mapped.stats)
            stats["reactions_proposed_raw"] += len(result.extraction.reactions)
            stats["reactions_schema_valid"] += len(result.extraction.reactions)
            mention_rows += mapped.mentions
            reaction_rows += mapped.reactions
            residual_rows += mapped.residuals
            status, reason = "done", ""
            report.segments_extracted += 1
        else:
            proposed, valid = _reaction_item_validity(result.raw)
            stats["reactions_proposed_raw"] += proposed
            stats["reactions_schema_valid"] += valid
            code = "llm_unavailable" if result.transient else f"teacher_{result.outcome}"
            residual_rows += _failure(segment, code, result, now).residuals
            retry = result.transient or result.outcome == "invalid"
            status, reason = ("pending" if retry else "done"), result.error
            if retry:
                pending += 1
                report.segments_pending += 1
            else:
                report.segments_failed += 1
        report.stats.update(stats)
        seg_rows.append(
            dict(
                segment_id=segment.segment_id,
                extractor=teacher.extractor,
                conversation_id=conv.id,
                status=status,
                outcome=result.outcome,
                reason=reason,
                stats=dict(stats),
                extracted_at=now,
            )
        )
    mention_rows, withheld = withhold_reflective(mention_rows)
    reaction_rows, on_purged = drop_tombstoned(reaction_rows, purged)
    report.stats["reflective_mentions_withheld"] += withheld
    report.stats["reactions_on_purged_messages"] += on_purged
    for r in residual_rows:
        report.residual_reasons[r["reason_code"]] += 1
    if retention_days is not None:
        for r in reaction_rows:
            r["expires_at"] = now + timedelta(days=retention_days)
    superseded = _write(
        store,
        conv.id,
        sha,
        teacher.extractor,
        need,
        mention_rows,
        reaction_rows,
        residual_rows,
        seg_rows,
        pending,
        now,
    )
    report.stats.update(superseded)
    report.mentions_written += len(mention_rows)
    report.reactions_written += len(reaction_rows)
    report.conversations_processed += 1
    report.conversations_pending += int(pending > 0)


def _failure(segment: SegmentInput, code: str, result: TeacherResult, now: datetime) -> MappedSegment:
    out = MappedSegment()
    payload = {
        "outcome": result.outcome,
        "raw": result.raw[:4000],
        "attempts": result.call.attempts if result.call else 0,
    }
    out.residuals.append(
        dict(
            stage=RESIDUAL_STAGE,
            segment_id=segment.segment_id,
            message_id=None,
            mention_id=None,
            reason_code=code,
            reason=result.error or result.outcome,
            payload=payload,
            recorded_at=now,
        )
    )
    return out


def _write(
    store, conv_id, sha, extractor, need, mention_rows, reaction_rows, residual_rows, seg_rows, pending, now
) -> dict[str, int]:
    need = list(need)
    answered = {r["segment_id"] for r in seg_rows if r["status"] == "done"}
    with store.reflective.begin() as ref:
        if need:  # this teacher's earlier reactions, and any teacher's on the segments it has answered
            ref.execute(
                delete(user_reactions).where(
                    user_reactions.c.segment_id.in_(need),
                    (user_reactions.c.extractor == extractor) | user_reactions.c.segment_id.in_(answered),
                )
            )
        if reaction_rows:
            ref.execute(insert(user_reactions), reaction_rows)
    with store.staging.begin() as stg:
        superseded = supersede_other_extractions(stg, answered, extractor, now) if answered else {}
        if mention_rows:
            ids = [r["mention_id"] for r in mention_rows]
            existing = set()
            for i in range(0, len(ids), 500):
                existing |= {
                    r.mention_id
                    for r in stg.execute(
                        select(mentions.c.mention_id).where(mentions.c.mention_id.in_(ids[i : i + 500]))
                    )
                }
            fresh = [r for r in mention_rows if r["mention_id"] not in existing]
            if fresh:
                stg.execute(insert(mentions), fresh)
        if need:
            stg.execute(
                delete(residuals).where(residuals.c.stage == RESIDUAL_STAGE, residuals.c.segment_id.in_(need))
            )
            stg.execute(
                delete(segment_extractions).where(
                    segment_extractions.c.segment_id.in_(need), segment_extractions.c.extractor == extractor
                )
            )
        if residual_rows:
            stg.execute(insert(residuals), residual_rows)
        if seg_rows:
            stg.execute(insert(segment_extractions), seg_rows)
        stg.execute(
            delete(stage_progress).where(
                stage_progress.c.stage == STAGE, stage_progress.c.conversation_id == conv_id
            )
        )
        stats = {
            "extractor": extractor,
            "segments": len(seg_rows),
            "mentions": len(mention_rows),
            "pending": pending,
        }
        stg.execute(
            insert(stage_progress),
            [
                dict(
                    stage=STAGE,
                    conversation_id=conv_id,
                    conversation_sha256=sha,
                    stats=stats,
                    finished_at=now,
                )
            ],
        )
    return superseded
