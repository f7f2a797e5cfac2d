"""Ablations of `query_memory`'s retrieval paths over corpora an `eval retrieval --methods memory` run already
built (its memory home), without rebuilding: each variant sets path weights (`path=weight`), switches paths
off (`-path`) or changes a retrieval setting (`setting=value`), all by the registry's path names
(`memory_query.paths.PATH_NAMES`), and the turn-level metrics of the benchmark protocol (and `latest_first` over
the questions whose evidence was told at different dates) are printed per variant.

    python -m evals.ablate --benchmark locomo --data ../shared/data/locomo/locomo_dev.json --home /tmp/ev_home \
        --variant base --variant no_dense:-dense_message,-dense_segment --variant flat:-concept,-topic,-graph \
        --variant light_speaker:speaker=0.2

Use it to see what each path contributes, not to fit weights to the dev questions.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path

from evals.datasets import load_benchmark
from evals.metrics import score_question
from evals.retrievers.memory import benchmark_ids, evidence_message_ids
from memory_core.store.db import MemoryHome
from memory_query import ReaderPool, RetrievalSettings
from memory_query.retrieval import rank

SETTINGS = {f.name for f in fields(RetrievalSettings)} - {"weights", "off"}  # pool sizes, floors


def parse_variant(text: str) -> tuple[str, RetrievalSettings]:
    """`name:part,part,...`, a part being `path=weight`, `-path` (switched off) or `setting=value`."""
    name, _, spec = text.partition(":")
    weights, options, off = {}, {}, []
    defaults = RetrievalSettings()
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        key, _, value = part.partition("=")
        if key.startswith("-") and not value:
            off.append(key[1:])
        elif key in SETTINGS:
            kind = type(getattr(defaults, key))
            options[key] = value if kind is str else kind(float(value))
        else:
            weights[key] = float(value)
    return name, replace(defaults.with_weights(**weights).without(*off), **options)


def run(
    benchmark: str, data: Path, home: MemoryHome, variants: list[tuple[str, RetrievalSettings]], k: int = 50
) -> dict:
    results: dict[str, list[dict]] = {name: [] for name, _ in variants}
    with ReaderPool(home) as pool:
        for name, turn_scores in _variant_scores(benchmark, data, home, variants, k, pool):
            results[name].append(turn_scores)
    out = {}
    for name, rows in results.items():
        keys = dict.fromkeys(k for r in rows for k in r)  # latest_first: only the questions it applies to
        out[name] = {m: round(statistics.mean(r[m] for r in rows if m in r), 4) for m in keys}
        out[name]["n_latest_first"] = sum(1 for r in rows if "latest_first" in r)
    return {name: row for name, row in out.items() if results[name]}


def _variant_scores(benchmark, data, home, variants, k, pool) -> Iterator[tuple[str, dict]]:
    """(variant, turn-level scores) per retrieval-scored question of each built corpus."""
    for haystack in load_benchmark(benchmark, data):
        store = home.corpus(f"eval-{benchmark}__{haystack.haystack_id}")
        if not store.exists():
            continue
        reader = pool.reader(store)
        for question in haystack.questions:
            if not question.relevant_turns:
                continue
            for name, settings in variants:
                answer = rank(reader, question.question, k, as_of=question.as_of, settings=settings)
                ranked = benchmark_ids(store, evidence_message_ids(answer), benchmark, k)
                scores = score_question(haystack, question, ranked.ranked_turns, ranked.ranked_sessions)
                yield name, {**scores["turn"], **scores.get("update", {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", required=True, choices=["locomo", "longmemeval"])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--variant", action="append", default=[], help="name:path=weight,-path,setting=value,...")
    args = ap.parse_args()
    variants = [parse_variant(v) for v in (args.variant or ["base"])]
    table = run(args.benchmark, args.data, MemoryHome.resolve(args.home), variants)
    keys = [
        "recall_frac@5",
        "recall_any@5",
        "recall_all@5",
        "recall_all@10",
        "ndcg@10",
        "latest_first",
        "n_latest_first",
    ]
    print("variant".ljust(24) + "".join(k.ljust(15) for k in keys))
    for name, row in table.items():
        print(name.ljust(24) + "".join(str(row.get(k, "")).ljust(15) for k in keys))


if __name__ == "__main__":
    main()
