"""`eval retrieval`: build each haystack with each method, ask its questions, write the output contract.

Output (other tools read it; keep it stable):
- `retrievals.jsonl`: one line per question and method, `{"benchmark", "question_id", "question_type",
  "method", "ranked_turns", "ranked_sessions"}` (top 50 each, best first). Every loaded question is written,
  abstention / adversarial ones too (QA mode reads them); the report scores the retrieval-scored ones.
- `report.json` / `report.md`: metrics per method, level and question type; build time per stage, query
  latency p50/p95, peak RSS (see `evals.report`).

Lines are written as they are produced, so a crashed run leaves the questions it finished.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evals.datasets import Haystack
from evals.metrics import score_question
from evals.report import write_report
from evals.retrievers.base import TOP_K, Retriever, StageTimer
from evals.rss import PeakRss

RETRIEVALS = "retrievals.jsonl"


@dataclass
class MethodStats:
    """What one method cost over the run."""

    build_seconds: list[float] = field(default_factory=list)  # per haystack, wall time of build()
    stage_seconds: list[dict[str, float]] = field(default_factory=list)  # per haystack
    stage_counts: list[dict[str, int]] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)
    peak_rss_bytes: int = 0


@dataclass
class RetrievalRun:
    benchmark: str
    data_path: str
    out_dir: Path
    scored: list[tuple[str, str, dict]] = field(default_factory=list)  # (method, question_type, level scores)
    stats: dict[str, MethodStats] = field(default_factory=dict)
    questions: int = 0
    haystacks: int = 0
    wall_seconds: float = 0.0
    rss_note: str = ""
    extras: dict = field(default_factory=dict)  # each method's configuration (Retriever.describe)
    report: dict = field(default_factory=dict)


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fp:
        for block in iter(lambda: fp.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_retrieval(
    benchmark: str,
    data_path: str | Path,
    haystacks: Sequence[Haystack],
    retrievers: Sequence[Retriever],
    out_dir: str | Path,
    k: int = TOP_K,
    log: Callable[[str], None] = lambda _msg: None,
) -> RetrievalRun:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = RetrievalRun(benchmark, str(data_path), out, stats={r.name: MethodStats() for r in retrievers})
    peak = PeakRss()
    run.rss_note = peak.note
    started = time.perf_counter()
    with (out / RETRIEVALS).open("w", encoding="utf-8") as fp:
        for n, haystack in enumerate(haystacks, 1):
            summary = []
            for retriever in retrievers:
                stats = run.stats[retriever.name]
                peak.reset()
                timer = StageTimer()
                t0 = time.perf_counter()
                built = retriever.build(haystack, timer)
                stats.build_seconds.append(time.perf_counter() - t0)
                stats.stage_seconds.append(dict(timer.seconds))
                stats.stage_counts.append(dict(timer.counts))
                for question in haystack.questions:
                    t1 = time.perf_counter()
                    result = built.retrieve(question, k)
                    stats.query_ms.append((time.perf_counter() - t1) * 1000.0)
                    line = {
                        "benchmark": benchmark,
                        "question_id": question.question_id,
                        "question_type": question.question_type,
                        "method": retriever.name,
                        "ranked_turns": list(result.ranked_turns[:k]),
                        "ranked_sessions": list(result.ranked_sessions[:k]),
                    }
                    fp.write(json.dumps(line, ensure_ascii=False) + "\n")
                    if question.retrieval_scored:
                        levels = score_question(
                            haystack, question, line["ranked_turns"], line["ranked_sessions"]
                        )
                        run.scored.append((retriever.name, question.question_type, levels))
                stats.peak_rss_bytes = max(stats.peak_rss_bytes, peak.read())
                summary.append(f"{retriever.name} {stats.build_seconds[-1]:.1f}s")
            fp.flush()
            run.questions += len(haystack.questions)
            run.haystacks += 1
            log(
                f"[{n}/{len(haystacks)}] {haystack.haystack_id}: {len(haystack.turns)} turns, {len(haystack.questions)} question(s); build "
                + ", ".join(summary)
            )
    run.wall_seconds = time.perf_counter() - started
    for retriever in retrievers:
        run.extras[retriever.name] = retriever.describe()
    run.report = write_report(run, haystacks, file_sha256(data_path))
    return run
