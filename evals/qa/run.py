"""`eval qa`: answer every question from its retrieved evidence, score the answers, write the benchmark's files.

Files in OUT:
- `hypotheses.jsonl`: `{"question_id", "hypothesis"}` per answered question (LongMemEval's own format).
- `qa_results.jsonl`: per question the hypothesis, gold answer, score (judge 1/0 or F1) and the judge's reply,
  or the error that stopped it. Appended as questions finish, so a crashed run resumes: a rerun into the same
  OUT skips questions that already have a score and retries the failed ones.
- `qa_report.json`: mean score overall and per question type.

Who answers is an `Answerer` (question → hypothesis): the reader (`reader_answerer`: the top `context_turns`
of a retrieval method's ranked turns, shown chronologically (haystack order) with their session dates, each
cut at `MAX_TURN_CHARS`, to a chat model), or the agent loop with an LLM driver (`evals.qa.agent`), which
retrieves and answers itself.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evals.datasets import Haystack, Question
from evals.qa.llm import ChatModel
from evals.qa.locomo_f1 import F1Scorer
from evals.qa.prompts import JUDGE_MAX_TOKENS, READER_MAX_TOKENS, judge_prompt, judged_correct, reader_prompt
from memory_core.errors import InputError

MAX_TURN_CHARS = 2000
HYPOTHESES = "hypotheses.jsonl"
RESULTS = "qa_results.jsonl"
QA_REPORT = "qa_report.json"


def load_rankings(path: str | Path, method: str) -> dict[str, list[str]]:
    """question_id → ranked turn ids of `method` from a retrievals.jsonl."""
    rankings = {}
    with open(path, encoding="utf-8") as fp:
        for raw in fp:
            line = json.loads(raw)
            if line["method"] == method:
                rankings[line["question_id"]] = line["ranked_turns"]
    if not rankings:
        raise InputError(f"{path}: no retrievals of method {method!r}")
    return rankings


def render_evidence(haystack: Haystack, ranked_turns: Sequence[str], n: int) -> list[str]:
    wanted = set(ranked_turns[:n])
    out = []
    for turn in haystack.turns:  # haystack order = chronological within the benchmark's session order
        if turn.turn_id in wanted:
            text = turn.text if len(turn.text) <= MAX_TURN_CHARS else turn.text[:MAX_TURN_CHARS] + " …"
            out.append(f"[{haystack.session_dates.get(turn.session_id, '')}] {turn.speaker}: {text}")
    return out


@dataclass
class Answerer:
    """Who answers a question: `answer(haystack, question) → hypothesis`, and what it is for the report."""

    answer: Callable[[Haystack, Question], str]
    describe: dict = field(default_factory=dict)
    known: Collection[str] | None = None  # the question ids it can answer (a reader: those retrieved)


def reader_answerer(
    benchmark: str, rankings: dict[str, list[str]], reader: ChatModel, context_turns: int = 10
) -> Answerer:
    """A chat model reading the top `context_turns` of a retrieval method's ranking."""

    def answer(haystack: Haystack, question: Question) -> str:
        evidence = render_evidence(haystack, rankings[question.question_id], context_turns)
        system, user = reader_prompt(benchmark, question.question, question.question_date, evidence)
        return reader.complete(system, user, READER_MAX_TOKENS)

    return Answerer(answer, {"reader_model": reader.model, "context_turns": context_turns}, set(rankings))


def _read_results(path: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    if path.exists():
        for raw in path.read_text(encoding="utf-8").splitlines():
            if raw.strip():
                row = json.loads(raw)
                rows[row["question_id"]] = row  # the last row of a question wins
    return rows


def _score(
    benchmark: str, question: Question, hypothesis: str, judge: ChatModel | None, f1: F1Scorer
) -> tuple[float, str]:
    if benchmark == "locomo":
        return f1.score(int(question.question_type), hypothesis, question.answer), ""
    if judge is None:
        raise InputError("LongMemEval QA needs a judge model")
    reply = judge.complete(
        "",
        judge_prompt(
            question.question_type, question.abstention, question.question, question.answer, hypothesis
        ),
        JUDGE_MAX_TOKENS,
    )
    return float(judged_correct(reply)), reply


def run_qa(
    benchmark: str,
    haystacks: Sequence[Haystack],
    answerer: Answerer,
    judge: ChatModel | None,
    out_dir: str | Path,
    log: Callable[[str], None] = lambda _m: None,
) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    questions = [(h, q) for h in haystacks for q in h.questions]
    known = answerer.known
    missing = [q.question_id for _, q in questions if known is not None and q.question_id not in known]
    if missing:
        raise InputError(f"no retrieval for {len(missing)} question(s), e.g. {missing[0]}")
    results = _read_results(out / RESULTS)
    f1 = F1Scorer()
    todo = [(h, q) for h, q in questions if "score" not in results.get(q.question_id, {})]
    log(f"{len(questions) - len(todo)} question(s) already scored in {out}; {len(todo)} to answer")
    with (out / RESULTS).open("a", encoding="utf-8") as fp:
        for n, (haystack, question) in enumerate(todo, 1):
            row = {
                "question_id": question.question_id,
                "question_type": question.question_type,
                "answer": question.answer,
            }
            started = time.perf_counter()
            try:
                row["hypothesis"] = answerer.answer(haystack, question)
                row["score"], row["judge"] = _score(benchmark, question, row["hypothesis"], judge, f1)
            except (
                Exception
            ) as exc:  # recorded per question with its reason; the run goes on, a rerun retries it
                row["error"] = f"{type(exc).__name__}: {exc}"
                log(f"  {question.question_id}: {row['error']}")
            row["seconds"] = round(time.perf_counter() - started, 3)
            results[question.question_id] = row
            fp.write(json.dumps(row, ensure_ascii=False) + "\n")
            fp.flush()
            if n % 25 == 0:
                log(f"  {n}/{len(todo)} answered")
    ordered = [results[q.question_id] for _, q in questions]
    scored = [r for r in ordered if "score" in r]
    with (out / HYPOTHESES).open("w", encoding="utf-8") as fp:
        for r in scored:
            fp.write(
                json.dumps(
                    {"question_id": r["question_id"], "hypothesis": r["hypothesis"]}, ensure_ascii=False
                )
                + "\n"
            )
    by_type: dict[str, list[float]] = defaultdict(list)
    for r in scored:
        by_type[r["question_type"]].append(r["score"])
    summary = {
        "benchmark": benchmark,
        "metric": "token F1 (LoCoMo rules)"
        if benchmark == "locomo"
        else "LLM judge accuracy (LongMemEval prompts)",
        **answerer.describe,
        "judge_model": judge.model if judge else None,
        "questions": len(ordered),
        "answered": len(scored),
        "errors": len(ordered) - len(scored),
        "overall": {
            "score": round(sum(r["score"] for r in scored) / len(scored), 4) if scored else 0.0,
            "n": len(scored),
        },
        "by_type": {t: {"score": round(sum(v) / len(v), 4), "n": len(v)} for t, v in sorted(by_type.items())},
    }
    (out / QA_REPORT).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
