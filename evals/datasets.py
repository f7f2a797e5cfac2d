"""LongMemEval and LoCoMo as haystacks of turns with questions and relevance labels.

The protocol is `../shared/data/README.md` (the benchmarks' own evaluation code):

- LongMemEval: one question = one haystack. Turn ids `<session_id>_<turn index>` (index within the session's
  turn list, both roles counted). Turn-level documents are the user turns; relevant = user turns with
  `has_answer`. Session level: relevant = evidence sessions (`answer_session_ids`) holding such a turn.
  Abstention (`_abs`) questions and questions without a relevant user turn are not retrieval-scored (they
  are still loaded: QA mode answers them).
- LoCoMo: one conversation = one haystack with many questions. Documents are every dialog turn (`dia_id`);
  categories 1–4 with evidence are scored; malformed evidence ("D8:6; D9:17") is split on `;` and ids that
  do not exist are dropped. Question id `<sample_id>:<index in its qa list>`, sessions `S<n>`.

The text a flat baseline indexes (`Turn.document`) is the turn as the benchmark's own code renders it:
LongMemEval the turn content; LoCoMo `<speaker> said, "<text>"` plus ` and shared <image caption>.`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memory_core.errors import InputError
from memory_core.ingest.benchmarks import parse_lme_date
from memory_core.settings import MEMORY_OS_SHARED_DATA

BENCHMARKS = ("longmemeval", "locomo")
REPO = Path(__file__).resolve().parents[1]


def shared_data_dir(path: str | Path | None = None) -> Path:
    """The benchmark dev data folder: `path`, else $MEMORY_OS_SHARED_DATA, else `../shared/data` beside the
    repository (a git worktree elsewhere sets the variable)."""
    return Path(path or MEMORY_OS_SHARED_DATA.get() or REPO.parent / "shared" / "data")


@dataclass(frozen=True)
class Turn:
    turn_id: str  # the benchmark's own id
    session_id: str
    role: str  # user | assistant (LoCoMo: speaker_a = user, as the ingestion parser maps it)
    speaker: str
    text: str
    document: str  # what a flat baseline indexes


@dataclass(frozen=True)
class Question:
    benchmark: str
    question_id: str
    question_type: str  # LongMemEval question_type, LoCoMo category as a string
    question: str
    answer: str
    haystack_id: str
    question_date: str | None = None  # LongMemEval's text, e.g. "2023/05/30 (Tue) 23:40"
    as_of: datetime | None = None  # the time of asking (LongMemEval: the end of question_date's day)
    relevant_turns: frozenset[str] = frozenset()
    relevant_sessions: frozenset[str] = frozenset()
    abstention: bool = False  # LongMemEval `_abs`, LoCoMo category 5

    @property
    def retrieval_scored(self) -> bool:
        return bool(self.relevant_turns)


@dataclass
class Haystack:
    """One corpus: a LongMemEval question's haystack or a LoCoMo conversation."""

    benchmark: str
    haystack_id: str  # LongMemEval question_id, LoCoMo sample_id (the pipeline's record id)
    turns: list[Turn]
    session_ids: list[str]
    session_dates: dict[str, str]
    questions: list[Question]
    # the documents the turn-level metric counts (LongMemEval: user turns; LoCoMo: every turn)
    scored_turn_ids: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)  # what the loader skipped, and why


def _read_json_list(path: str | Path, what: str) -> list:
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: no such file")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{file}: not a JSON document ({exc})") from None
    if not isinstance(data, list):
        raise InputError(f"{file}: a {what} file is a JSON list, found {type(data).__name__}")
    return data


# ------------------------------------------------------------------------------------------ LongMemEval
def question_day_end(question_date: object) -> datetime | None:
    """The time memory is asked at: the end of the question's day. LongMemEval's dates order days, not the
    hours of the question's own day: in the dev file 160 sessions are dated later on the question's day
    than its time (none on a later day), and 6 questions have their evidence in one of them (a3045048:
    "my best friend's 30th birthday party … on the 22nd of April", told at 14:45, asked at 13:45)."""
    when = parse_lme_date(question_date)
    return when.replace(hour=23, minute=59, second=59) if when else None


def load_longmemeval(path: str | Path) -> list[Haystack]:
    haystacks = []
    for index, rec in enumerate(_read_json_list(path, "LongMemEval")):
        if not isinstance(rec, dict) or "haystack_sessions" not in rec or "question_id" not in rec:
            raise InputError(f"{path}: record {index} is not a LongMemEval question")
        haystacks.append(_parsed(path, rec["question_id"], _lme_haystack, rec))
    return haystacks


def _parsed(path: str | Path, record_id: object, parse, record: dict) -> Haystack:
    """One record parsed, or one clear error naming the file and the record."""
    try:
        return parse(record)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{path}: record {record_id!r} is malformed ({type(exc).__name__}: {exc})") from None


def _lme_haystack(rec: dict) -> Haystack:
    qid = str(rec["question_id"])
    turns: list[Turn] = []
    session_ids: list[str] = []
    dates: dict[str, str] = {}
    notes: list[str] = []
    relevant_turns: set[str] = set()
    relevant_sessions: set[str] = set()
    user_turns: set[str] = set()
    evidence_sessions = {str(s) for s in rec.get("answer_session_ids") or []}
    for sid, date, session in zip(
        rec["haystack_session_ids"], rec["haystack_dates"], rec["haystack_sessions"], strict=True
    ):
        sid = str(sid)
        if sid in dates:
            # the ingestion parser dead-letters a repeated session id; the ids (and, in the data, the texts) are the same
            notes.append(f"session {sid} repeats in the haystack: kept the first")
            continue
        session_ids.append(sid)
        dates[sid] = str(date)
        for n, turn in enumerate(session):
            turn_id = f"{sid}_{n}"
            role = turn["role"]
            if role == "user":
                user_turns.add(turn_id)
                if turn.get("has_answer"):
                    relevant_turns.add(turn_id)
                    if sid in evidence_sessions:
                        relevant_sessions.add(sid)
            text = turn["content"] if isinstance(turn.get("content"), str) else ""
            if not text.strip():
                notes.append(f"turn {turn_id} is empty: not indexed (the pipeline dead-letters it too)")
                continue
            turns.append(Turn(turn_id, sid, role, role, text, text))
    abstention = qid.endswith("_abs")
    question = Question(
        benchmark="longmemeval",
        question_id=qid,
        question_type=str(rec["question_type"]),
        question=str(rec["question"]),
        answer=str(rec.get("answer", "")),
        haystack_id=qid,
        question_date=rec.get("question_date"),
        as_of=question_day_end(rec.get("question_date")),
        relevant_turns=frozenset() if abstention else frozenset(relevant_turns),
        relevant_sessions=frozenset() if abstention else frozenset(relevant_sessions),
        abstention=abstention,
    )
    return Haystack("longmemeval", qid, turns, session_ids, dates, [question], frozenset(user_turns), notes)


# ------------------------------------------------------------------------------------------ LoCoMo
def _session_numbers(conversation: dict) -> list[int]:
    return sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))


def load_locomo(path: str | Path) -> list[Haystack]:
    haystacks = []
    for index, sample in enumerate(_read_json_list(path, "LoCoMo")):
        if (
            not isinstance(sample, dict)
            or not isinstance(sample.get("conversation"), dict)
            or "sample_id" not in sample
        ):
            raise InputError(f"{path}: record {index} is not a LoCoMo sample")
        haystacks.append(_parsed(path, sample["sample_id"], _locomo_haystack, sample))
    return haystacks


def locomo_document(speaker: str, text: str, caption: str | None) -> str:
    doc = f'{speaker} said, "{text}"'
    return f"{doc} and shared {caption}." if caption else doc


def _locomo_haystack(sample: dict) -> Haystack:
    sample_id = str(sample["sample_id"])
    conv = sample["conversation"]
    speaker_b = conv.get("speaker_b")
    turns: list[Turn] = []
    session_ids: list[str] = []
    dates: dict[str, str] = {}
    for n in _session_numbers(conv):
        sid = f"S{n}"
        session_ids.append(sid)
        dates[sid] = str(conv.get(f"session_{n}_date_time", ""))
        for turn in conv[f"session_{n}"]:
            speaker, text = str(turn["speaker"]), str(turn.get("text") or "")
            role = "assistant" if speaker == speaker_b else "user"
            turns.append(
                Turn(
                    str(turn["dia_id"]),
                    sid,
                    role,
                    speaker,
                    text,
                    locomo_document(speaker, text, turn.get("blip_caption")),
                )
            )
    ids = {t.turn_id for t in turns}
    notes: list[str] = []
    questions = []
    for i, qa in enumerate(sample.get("qa") or []):
        qid = f"{sample_id}:{i}"
        category = int(qa["category"])
        evidence: set[str] = set()
        for entry in qa.get("evidence") or []:
            for part in str(entry).split(";"):
                part = part.strip()
                if part in ids:
                    evidence.add(part)
                elif part:
                    notes.append(f"{qid}: evidence id {part!r} does not exist: dropped")
        scored = category in (1, 2, 3, 4)
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        questions.append(
            Question(
                benchmark="locomo",
                question_id=qid,
                question_type=str(category),
                question=str(qa["question"]),
                answer=str(answer),
                haystack_id=sample_id,
                relevant_turns=frozenset(evidence) if scored else frozenset(),
                relevant_sessions=frozenset("S" + e[1:].split(":")[0] for e in evidence)
                if scored
                else frozenset(),
                abstention=category == 5,
            )
        )
    return Haystack("locomo", sample_id, turns, session_ids, dates, questions, frozenset(ids), notes)


# ------------------------------------------------------------------------------------------ selection
def load_benchmark(benchmark: str, path: str | Path) -> list[Haystack]:
    if benchmark == "longmemeval":
        return load_longmemeval(path)
    if benchmark == "locomo":
        return load_locomo(path)
    raise InputError(f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")


def select(
    haystacks: list[Haystack], limit: int | None = None, question_ids: Iterable[str] | None = None
) -> list[Haystack]:
    """The first `limit` records of the file (LongMemEval questions, LoCoMo conversations), then only the
    given question ids (a LoCoMo sample id picks its whole conversation). Unknown ids are an error."""
    chosen = haystacks[:limit] if limit is not None else list(haystacks)
    if not question_ids:
        return chosen
    wanted = set(question_ids)
    known = {q.question_id for h in chosen for q in h.questions} | {h.haystack_id for h in chosen}
    missing = sorted(wanted - known)
    if missing:
        raise InputError(f"unknown question id(s) {', '.join(missing)} (after --limit)")
    out = []
    for h in chosen:
        if h.haystack_id in wanted:
            out.append(h)
            continue
        questions = [q for q in h.questions if q.question_id in wanted]
        if questions:
            out.append(
                Haystack(
                    h.benchmark,
                    h.haystack_id,
                    h.turns,
                    h.session_ids,
                    h.session_dates,
                    questions,
                    h.scored_turn_ids,
                    h.notes,
                )
            )
    return out
