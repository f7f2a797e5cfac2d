"""Ablations of `query_memory`'s retrieval paths over corpora an `eval retrieval --methods memory` run already
built (its memory home), without rebuilding: each variant sets path weights, and the turn-level metrics
of the benchmark protocol are printed per variant.

    python -m evals.ablate --benchmark locomo --data ../shared/data/locomo/locomo_dev.json --home /tmp/ev_home \
        --variant base --variant no_dense:dense_message=0,dense_segment=0 --variant lexical_only:session=0,...

Use it to see what each path contributes, not to fit weights to the dev questions.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path

from evals.datasets import load_benchmark
from evals.metrics import score_question
from evals.retrievers.memory import benchmark_ids, evidence_message_ids
from memory_core.store.db import MemoryHome
from memory_query.retrieval import RetrievalSettings, rank, reader_for, with_weights


def parse_variant(text: str) -> tuple[str, RetrievalSettings]:
    name, _, spec = text.partition(":")
    weights, options = {}, {}
    settings_fields = set(RetrievalSettings.__dataclass_fields__)
    for part in filter(None, spec.split(",")):
        key, _, value = part.partition("=")
        key = key.strip()
        if key in settings_fields:
            options[key] = type(getattr(RetrievalSettings(), key))(float(value))
        else:
            weights[key] = float(value)
    return name, replace(with_weights(RetrievalSettings(), **weights), **options)


def run(
    benchmark: str, data: Path, home: MemoryHome, variants: list[tuple[str, RetrievalSettings]], k: int = 50
) -> dict:
    results: dict[str, list[dict]] = {name: [] for name, _ in variants}
    for haystack in load_benchmark(benchmark, data):
        store = home.corpus(f"eval-{benchmark}__{haystack.haystack_id}")
        if not store.exists():
            continue
        reader = reader_for(store)
        for question in haystack.questions:
            if not question.relevant_turns:
                continue
            for name, settings in variants:
                answer = rank(reader, question.question, k, as_of=question.as_of, settings=settings)
                ranked = benchmark_ids(store, evidence_message_ids(answer), benchmark, k)
                results[name].append(
                    score_question(haystack, question, ranked.ranked_turns, ranked.ranked_sessions)["turn"]
                )
    return {
        name: {m: round(statistics.mean(r[m] for r in rows), 4) for m in rows[0]}
        for name, rows in results.items()
        if rows
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", required=True, choices=["locomo", "longmemeval"])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--variant", action="append", default=[], help="name:path=weight,...")
    args = ap.parse_args()
    variants = [parse_variant(v) for v in (args.variant or ["base"])]
    table = run(args.benchmark, args.data, MemoryHome.resolve(args.home), variants)
    keys = ["recall_frac@5", "recall_any@5", "recall_all@5", "recall_all@10", "ndcg@10"]
    print("variant".ljust(24) + "".join(k.ljust(15) for k in keys))
    for name, row in table.items():
        print(name.ljust(24) + "".join(str(row.get(k, "")).ljust(15) for k in keys))


if __name__ == "__main__":
    main()
