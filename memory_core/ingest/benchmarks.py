"""LongMemEval and LoCoMo benchmark files.

LongMemEval: one question = one haystack = one corpus (`record_id`; without one, every question of the
file, a session repeated by a later question being a duplicate); each haystack session is a conversation,
each turn a message with `source_ref` `<session_id>_<turn index>` (both roles counted). `has_answer` is kept
as a source attribute for evaluation only, never used as a feature. Question, answer and evidence-session
labels are not stored at all.

LoCoMo: each session of a sample is a conversation (`source_ref` `<sample_id>:S<n>`), each turn a message
with its `dia_id`; `speaker_a` speaks as `user`, `speaker_b` as `assistant`, and `author` keeps the name.
A session is any `session_<n>` key, in any case and zero padding (`Session_2`, `session_01`); a second key
for the same number is its own conversation (`<sample_id>:<key>`). Image captions are source attributes.
QA labels are not stored.

Both give only session dates: turns get the session date plus an order-preserving offset, flagged derived.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from memory_core.errors import InputError
from memory_core.ingest.census import SESSION_KEY, lme_records, locomo_records
from memory_core.ingest.jsonstream import iter_json_array
from memory_core.ingest.records import (
    DeadLetter,
    ParsedConversation,
    ParsedMessage,
    check_text,
    excerpt,
    fill_missing_times,
    keep_timed,
    label,
    scalar_ref,
    shielded,
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
    return [_question_id(r, i) for i, r in enumerate(iter_json_array(path)) if isinstance(r, dict)]


def _question_id(rec: dict, index: int) -> str:
    return scalar_ref(rec.get("question_id")) or f"question[{index}]"


def parse_longmemeval(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    """The sessions of one question (`record_id`), or of every question of the file (None)."""
    found: set[str] = set()
    for index, rec in enumerate(iter_json_array(path)):
        if not isinstance(rec, dict):
            if record_id is None:
                yield DeadLetter(
                    f"question[{index}]", "bad_shape", "question record is not an object", excerpt(rec)
                )
            continue
        qid = _question_id(rec, index)
        if record_id is not None and qid != record_id:
            continue
        if qid in found:  # the same question twice: its records are duplicates of the first one's
            yield from _repeated_question(rec, qid)
            continue
        found.add(qid)
        yield from shielded(_lme_sessions, (rec, qid, max_chars), rec, qid, lme_records(rec))
    if record_id is not None and not found:
        raise InputError(f"{path}: no LongMemEval question with question_id {record_id!r}")


def _repeated_question(rec: dict, qid: str) -> Iterator[DeadLetter]:
    sessions = rec.get("haystack_sessions")
    if not isinstance(sessions, list):
        yield DeadLetter(qid, "duplicate_id", "question_id repeats in the file", excerpt(rec))
        return
    for n, session in enumerate(sessions):
        turns = session if isinstance(session, list) else [session]
        for i, turn in enumerate(turns):
            yield DeadLetter(
                f"{qid}#{n}_{i}", "duplicate_id", "question_id repeats in the file", excerpt(turn)
            )


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
        sid = (scalar_ref(ids[n]) if n < len(ids) else None) or f"session[{n}]"
        if sid in seen:
            turns = session if isinstance(session, list) else [session]
            for i, turn in enumerate(turns):
                yield DeadLetter(
                    f"{sid}#{n}_{i}",
                    "duplicate_id",
                    f"session id {label(sid)} repeats in the haystack",
                    excerpt(turn),
                )
            continue
        seen.add(sid)
        if not isinstance(session, list):
            yield DeadLetter(sid, "bad_shape", "session is not a list of turns", excerpt(session))
            continue
        date_text = dates[n] if n < len(dates) else None
        date = parse_lme_date(date_text)
        conv = ParsedConversation(
            source_ref=sid,
            title=sid,
            created_at=date or last_date,
            messages=[],
            attributes={"haystack_index": n, "date_text": date_text if isinstance(date_text, str) else None},
        )
        if date is None:
            conv.attributes["session_date_missing"] = True
        last_date = date or last_date
        prev_ref = None
        for i, turn in enumerate(session):
            conv.records_seen += 1
            ref = f"{sid}_{i}"
            if not isinstance(turn, dict):
                conv.dead_letters.append(DeadLetter(ref, "bad_shape", "turn is not an object", excerpt(turn)))
                continue
            role = turn.get("role")
            if role not in ("user", "assistant", "system"):
                conv.dead_letters.append(
                    DeadLetter(ref, "unknown_role", f"unknown role {label(role)}", excerpt(turn))
                )
                continue
            code, reason = check_text(turn.get("content"), max_chars)
            if code:
                conv.dead_letters.append(DeadLetter(ref, code, reason, excerpt(turn)))
                continue
            attrs = {"has_answer": turn["has_answer"] is True} if "has_answer" in turn else {}
            conv.messages.append(
                ParsedMessage(ref, role, role, turn["content"], None, parent_ref=prev_ref, attributes=attrs)
            )
            prev_ref = ref
        timed = fill_missing_times(conv.messages, conv.created_at)
        keep_timed(conv, timed, "no session date and no earlier session to derive one from")
        yield conv


# ------------------------------------------------------------------------------------------ LoCoMo
def locomo_sample_ids(path: Path) -> list[str]:
    return [
        _sample_id(r, i)
        for i, r in enumerate(iter_json_array(path, allow_object=True))
        if isinstance(r, dict)
    ]


def _sample_id(sample: object, index: int) -> str:
    found = scalar_ref(sample.get("sample_id")) if isinstance(sample, dict) else None
    return found or f"sample[{index}]"


def parse_locomo(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    """Every sample's sessions (or only the sample `record_id`)."""
    found = False
    for index, sample in enumerate(iter_json_array(path, allow_object=True)):
        sid = _sample_id(sample, index)
        if record_id is not None and not (isinstance(sample, dict) and sid == record_id):
            continue
        found = True
        yield from shielded(_locomo_sessions, (sample, sid, max_chars), sample, sid, locomo_records(sample))
    if record_id is not None and not found:
        raise InputError(f"{path}: no LoCoMo sample with sample_id {record_id!r}")


def session_keys(conv: dict) -> list[tuple[int, str]]:
    """(session number, key) of every session key, by number then key (`session_1` before `session_01`)."""
    keys = []
    for key in conv:
        m = SESSION_KEY.fullmatch(key) if isinstance(key, str) else None
        if m:
            keys.append((int(m.group(1)), key))
    return sorted(keys, key=lambda nk: (nk[0], nk[1] != f"session_{nk[0]}", nk[1]))


def _session_date(conv: dict, key: str, n: int) -> object:
    for candidate in (f"{key}_date_time", f"session_{n}_date_time"):
        if candidate in conv:
            return conv[candidate]
    wanted = f"{key}_date_time".lower()
    return next((v for k, v in conv.items() if isinstance(k, str) and k.lower() == wanted), None)


def _locomo_sessions(
    sample: object, sample_id: str, max_chars: int
) -> Iterator[ParsedConversation | DeadLetter]:
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        yield DeadLetter(sample_id, "bad_shape", "sample without a 'conversation' object", excerpt(sample))
        return
    c = sample["conversation"]
    speaker_a, speaker_b = c.get("speaker_a"), c.get("speaker_b")
    seen_dia: set[str] = set()
    numbers: set[int] = set()
    last_date: datetime | None = None
    for n, key in session_keys(c):
        turns = c[key]
        conv_ref = f"{sample_id}:S{n}" if n not in numbers else f"{sample_id}:{key}"
        numbers.add(n)
        if not isinstance(turns, list):
            yield DeadLetter(conv_ref, "bad_shape", "session is not a list of turns", excerpt(turns))
            continue
        date_text = _session_date(c, key, n)
        date = parse_locomo_date(date_text)
        conv = ParsedConversation(
            source_ref=conv_ref,
            title=f"{sample_id} session {n}",
            created_at=date or last_date,
            messages=[],
            attributes={
                "sample_id": sample_id,
                "session": n,
                "date_text": date_text if isinstance(date_text, str) else None,
                "speakers": [s if isinstance(s, str) else None for s in (speaker_a, speaker_b)],
            },
        )
        if key != f"session_{n}":
            conv.attributes["session_key"] = key
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
            ref = scalar_ref(turn.get("dia_id")) or f"{conv_ref}[{i}]"
            if ref in seen_dia:
                conv.dead_letters.append(
                    DeadLetter(
                        f"{conv_ref}[{i}]", "duplicate_id", f"dia_id {label(ref)} repeats", excerpt(turn)
                    )
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
            conv.messages.append(
                ParsedMessage(
                    ref, role, speaker, turn["text"], None, parent_ref=prev_ref, attributes=_image(turn)
                )
            )
            prev_ref = ref
        timed = fill_missing_times(conv.messages, conv.created_at)
        keep_timed(conv, timed, "no session date and no earlier session to derive one from")
        yield conv


def _image(turn: dict) -> dict:
    """A turn's image fields as source attributes (strings only; a list of URLs stays a list)."""
    attrs: dict = {}
    if isinstance(turn.get("blip_caption"), str) and turn["blip_caption"]:
        attrs["image_caption"] = turn["blip_caption"]
    url = turn.get("img_url")
    if url:
        urls = url if isinstance(url, list) else [url]
        attrs["image_url"] = [u for u in urls if isinstance(u, str)]
    if isinstance(turn.get("query"), str) and turn["query"]:
        attrs["image_query"] = turn["query"]
    return attrs
