"""LongMemEval and LoCoMo benchmark files.

LongMemEval: one question = one haystack = one corpus; each haystack session is a conversation, each
turn a message with `source_ref` `<session_id>_<turn index>` (both roles counted). `has_answer` is kept as
a source attribute for evaluation only, never used as a feature. Question, answer and evidence-session
labels are not stored at all.

LoCoMo: each session of a sample is a conversation (`source_ref` `<sample_id>:S<n>`), each turn a message
with its `dia_id`; `speaker_a` speaks as `user`, `speaker_b` as `assistant`, and `author` keeps the name.
Image captions are source attributes. QA labels are not stored.

Both give only session dates: turns get the session date plus an order-preserving offset, flagged derived.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from memory_core.ingest.jsonstream import iter_json_array
from memory_core.ingest.records import (
    DeadLetter,
    ParsedConversation,
    ParsedMessage,
    check_text,
    excerpt,
    fill_missing_times,
)

_LME_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]{3}\))?\s*(\d{1,2}):(\d{2})\s*$")


def parse_lme_date(text: object) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' → datetime; None when malformed."""
    if not isinstance(text, str):
        return None
    m = _LME_DATE.match(text)
    if not m:
        return None
    y, mo, d, h, mi = (int(g) for g in m.groups())
    try:
        return datetime(y, mo, d, h, mi)
    except ValueError:
        return None


def parse_locomo_date(text: object) -> datetime | None:
    """'1:56 pm on 8 May, 2023' → datetime; None when malformed."""
    if not isinstance(text, str):
        return None
    cleaned = re.sub(r"\s+", " ", text.strip())
    for fmt in (
        "%I:%M %p on %d %B, %Y",
        "%I:%M %p on %d %b, %Y",
        "%I:%M %p on %B %d, %Y",
        "%d %B, %Y",
        "%d %B %Y",
    ):
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    return None


# ------------------------------------------------------------------------------------------ LongMemEval
def lme_question_ids(path: Path) -> list[str]:
    return [str(r.get("question_id")) for r in iter_json_array(path) if isinstance(r, dict)]


def parse_longmemeval(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    """The sessions of one question (`record_id`; the first question when None)."""
    found = False
    for index, rec in enumerate(iter_json_array(path)):
        if not isinstance(rec, dict):
            if record_id is None:
                yield DeadLetter(
                    f"question[{index}]", "bad_shape", "question record is not an object", excerpt(rec)
                )
            continue
        qid = str(rec.get("question_id", f"question[{index}]"))
        if record_id is not None and qid != record_id:
            continue
        found = True
        yield from _lme_sessions(rec, qid, max_chars)
        break
    if record_id is not None and not found:
        from memory_core.errors import InputError

        raise InputError(f"{path}: no LongMemEval question with question_id {record_id!r}")


def _lme_sessions(rec: dict, qid: str, max_chars: int) -> Iterator[ParsedConversation | DeadLetter]:
    sessions, ids, dates = (
        rec.get("haystack_sessions"),
        rec.get("haystack_session_ids"),
        rec.get("haystack_dates"),
    )
    if not isinstance(sessions, list):
        yield DeadLetter(qid, "bad_shape", "question without a 'haystack_sessions' list", excerpt(rec))
        return
    ids = ids if isinstance(ids, list) else []
    dates = dates if isinstance(dates, list) else []
    seen: set[str] = set()
    last_date: datetime | None = None
    for n, session in enumerate(sessions):
        sid = str(ids[n]) if n < len(ids) and ids[n] is not None else f"session[{n}]"
        turns = session if isinstance(session, list) else []
        if sid in seen:
            yield DeadLetter(
                sid,
                "duplicate_id",
                f"session id {sid!r} repeats in the haystack",
                excerpt(session),
                max(1, len(turns)),
            )
            continue
        seen.add(sid)
        if not isinstance(session, list):
            yield DeadLetter(sid, "bad_shape", "session is not a list of turns", excerpt(session))
            continue
        date = parse_lme_date(dates[n]) if n < len(dates) else None
        conv = ParsedConversation(
            source_ref=sid,
            title=sid,
            created_at=date or last_date,
            messages=[],
            attributes={"haystack_index": n, "date_text": dates[n] if n < len(dates) else None},
        )
        if date is None:
            conv.attributes["session_date_missing"] = True
        last_date = date or last_date
        prev_ref = None
        for i, turn in enumerate(turns):
            conv.records_seen += 1
            ref = f"{sid}_{i}"
            if not isinstance(turn, dict):
                conv.dead_letters.append(DeadLetter(ref, "bad_shape", "turn is not an object", excerpt(turn)))
                continue
            role = turn.get("role")
            if role not in ("user", "assistant", "system"):
                conv.dead_letters.append(
                    DeadLetter(ref, "unknown_role", f"unknown role {role!r}", excerpt(turn))
                )
                continue
            code, reason = check_text(turn.get("content"), max_chars)
            if code:
                conv.dead_letters.append(DeadLetter(ref, code, reason, excerpt(turn)))
                continue
            attrs = {"has_answer": bool(turn["has_answer"])} if "has_answer" in turn else {}
            conv.messages.append(
                ParsedMessage(ref, role, role, turn["content"], None, parent_ref=prev_ref, attributes=attrs)
            )
            prev_ref = ref
        if not fill_missing_times(conv.messages, conv.created_at):
            for msg in conv.messages:
                conv.dead_letters.append(
                    DeadLetter(
                        msg.source_ref,
                        "no_timestamp",
                        "no session date and no earlier session to derive one from",
                        excerpt(msg.text),
                    )
                )
            conv.messages = []
        yield conv


# ------------------------------------------------------------------------------------------ LoCoMo
def locomo_sample_ids(path: Path) -> list[str]:
    return [str(r.get("sample_id")) for r in iter_json_array(path, allow_object=True) if isinstance(r, dict)]


def parse_locomo(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    """Every sample's sessions (or only the sample `record_id`)."""
    found = False
    for index, sample in enumerate(iter_json_array(path, allow_object=True)):
        sid = (
            str(sample.get("sample_id", f"sample[{index}]"))
            if isinstance(sample, dict)
            else f"sample[{index}]"
        )
        if record_id is not None and sid != record_id:
            continue
        found = True
        yield from _locomo_sessions(sample, sid, max_chars)
    if record_id is not None and not found:
        from memory_core.errors import InputError

        raise InputError(f"{path}: no LoCoMo sample with sample_id {record_id!r}")


def _session_numbers(conv: dict) -> list[int]:
    nums = []
    for key in conv:
        m = re.fullmatch(r"session_(\d+)", key)
        if m:
            nums.append(int(m.group(1)))
    return sorted(nums)


def _locomo_sessions(
    sample: object, sample_id: str, max_chars: int
) -> Iterator[ParsedConversation | DeadLetter]:
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        yield DeadLetter(sample_id, "bad_shape", "sample without a 'conversation' object", excerpt(sample))
        return
    c = sample["conversation"]
    speaker_a, speaker_b = c.get("speaker_a"), c.get("speaker_b")
    seen_dia: set[str] = set()
    last_date: datetime | None = None
    for n in _session_numbers(c):
        turns = c.get(f"session_{n}")
        conv_ref = f"{sample_id}:S{n}"
        if not isinstance(turns, list):
            yield DeadLetter(conv_ref, "bad_shape", "session is not a list of turns", excerpt(turns))
            continue
        date_text = c.get(f"session_{n}_date_time")
        date = parse_locomo_date(date_text)
        conv = ParsedConversation(
            source_ref=conv_ref,
            title=f"{sample_id} session {n}",
            created_at=date or last_date,
            messages=[],
            attributes={
                "sample_id": sample_id,
                "session": n,
                "date_text": date_text,
                "speakers": [speaker_a, speaker_b],
            },
        )
        if date is None:
            conv.attributes["session_date_missing"] = True
        last_date = date or last_date
        prev_ref = None
        for i, turn in enumerate(turns):
            conv.records_seen += 1
            if not isinstance(turn, dict):
                conv.dead_letters.append(
                    DeadLetter(f"{conv_ref}[{i}]", "bad_shape", "turn is not an object", excerpt(turn))
                )
                continue
            ref = str(turn.get("dia_id") or f"{conv_ref}[{i}]")
            if ref in seen_dia:
                conv.dead_letters.append(
                    DeadLetter(ref, "duplicate_id", f"dia_id {ref!r} repeats", excerpt(turn))
                )
                continue
            speaker = turn.get("speaker")
            if not isinstance(speaker, str) or not speaker.strip():
                conv.dead_letters.append(
                    DeadLetter(ref, "unknown_role", "turn without a speaker", excerpt(turn))
                )
                continue
            code, reason = check_text(turn.get("text"), max_chars)
            if code:
                conv.dead_letters.append(DeadLetter(ref, code, reason, excerpt(turn)))
                continue
            seen_dia.add(ref)
            role = "assistant" if speaker_b is not None and speaker == speaker_b else "user"
            attrs = {}
            if turn.get("blip_caption"):
                attrs["image_caption"] = str(turn["blip_caption"])
            if turn.get("img_url"):
                attrs["image_url"] = (
                    turn["img_url"] if isinstance(turn["img_url"], list) else [turn["img_url"]]
                )
            if turn.get("query"):
                attrs["image_query"] = str(turn["query"])
            conv.messages.append(
                ParsedMessage(ref, role, speaker, turn["text"], None, parent_ref=prev_ref, attributes=attrs)
            )
            prev_ref = ref
        if not fill_missing_times(conv.messages, conv.created_at):
            for msg in conv.messages:
                conv.dead_letters.append(
                    DeadLetter(
                        msg.source_ref,
                        "no_timestamp",
                        "no session date and no earlier session to derive one from",
                        excerpt(msg.text),
                    )
                )
            conv.messages = []
        yield conv
