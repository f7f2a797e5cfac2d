"""Benchmark of the Concept Memory Loop on real mentions: time per 1k mentions, the share spent embedding,
and the quality figures of the concept memory it builds.

Builds one corpus from a LoCoMo or LongMemEval file with the pipeline's own code (ingest, segments, the
Semantic Mapper over the offline teacher), once; then, `--repeats` times, consolidates a fresh copy of it
with the local MiniLM embedder behind a fresh (cold) embedding cache, and a second fresh copy with that
cache filled (warm: embedding mostly free, the loop's own cost). The baseline, measured in the same process,
is the pure embedding time of every text the cold run embeds. Prints medians and ratios as JSON, and the
quality figures of the last cold run: decisions with reason codes, concepts per type and state, residual
share and novelty, coverage, purity, grounding, churn, compression, and a Markdown sample of concepts with
their evidence (`--sample-md`).

    python -m evals.benchmarks.bench_consolidation /work/shared/data/locomo/locomo_dev.json
    python -m evals.benchmarks.bench_consolidation \\
        /work/shared/data/longmemeval/longmemeval_s_dev.json --record 26bdc477
    python -m evals.benchmarks.bench_consolidation --retrieval-only   # the retriever by concepts indexed
    python -m evals.benchmarks.bench_consolidation --patterns-only    # a held pattern's episodes by facts
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from sqlalchemy import select

from memory_core.concepts import metrics
from memory_core.embeddings import CachedEmbedder, EmbeddingCache, HashingEmbedder
from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder
from memory_core.extraction.offline_teacher import OfflineTeacher
from memory_core.extraction.stage import extract_corpus
from memory_core.ingest.loader import ingest_file
from memory_core.memory_loop.loop import consolidate
from memory_core.ontology.concepts import concept_embedding_key
from memory_core.segments import build_segments
from memory_core.store.db import MemoryHome, dispose_engines
from memory_core.store.schema import action_log, canonical_concepts, mentions

CORPUS = "bench"


def build_mentions(root: Path, path: str, source_format: str, record: str | None) -> dict:
    """Ingest, segment and extract (offline teacher, Semantic Mapper) into a memory home at `root`."""
    store = MemoryHome.resolve(root).corpus(CORPUS)
    t0 = time.perf_counter()
    ingested = ingest_file(store, path, source_format, record_id=record)
    segmented = build_segments(store)
    extracted = extract_corpus(store, OfflineTeacher())
    seconds = time.perf_counter() - t0
    dispose_engines()
    return {
        "messages": ingested.stored,
        "segments": segmented.segments_current,
        "mentions": extracted.mentions_written,
        "extractor": extracted.extractor,
        "build_seconds": round(seconds, 3),
    }


def _copy(template: Path, to: Path):
    shutil.copytree(template, to)
    return MemoryHome.resolve(to)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", help="a LoCoMo or LongMemEval JSON file")
    ap.add_argument("--format", choices=["locomo", "longmemeval"], help="default: from the file name")
    ap.add_argument(
        "--record", help="one LoCoMo sample_id / LongMemEval question_id (default: the whole file)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--embedder", choices=["local", "hashing"], default="local")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--sample-md", help="write the Markdown concept sample here")
    ap.add_argument("--sample-size", type=int, default=15)
    ap.add_argument(
        "--retrieval-only",
        action="store_true",
        help="only the retriever's cost per candidate by concepts indexed (exact and inverted file)",
    )
    ap.add_argument(
        "--patterns-only",
        action="store_true",
        help="only a held reflective candidate's episode search by facts of its subject (kept rows vs per fact)",
    )
    args = ap.parse_args()
    if not (args.retrieval_only or args.patterns_only) and not args.path:
        ap.error("a LoCoMo or LongMemEval JSON file is needed (or --retrieval-only / --patterns-only)")
    if args.retrieval_only or args.patterns_only:
        print(json.dumps(retrieval_scaling() if args.retrieval_only else pattern_scaling(), indent=1))
        return
    source_format = args.format or ("longmemeval" if "longmemeval" in Path(args.path).name else "locomo")
    model = (
        SentenceTransformerEmbedder(threads=args.threads) if args.embedder == "local" else HashingEmbedder()
    )
    model.embed(["load the model before timing"])
    work = Path(tempfile.mkdtemp(prefix="bench-consolidation-"))
    cold, cold_share, warm, pure = [], [], [], []
    last = None
    try:
        built = build_mentions(work / "template", args.path, source_format, args.record)
        for rep in range(args.repeats):
            home = _copy(work / "template", work / f"r{rep}")
            store = home.corpus(CORPUS)
            cached = CachedEmbedder(model, EmbeddingCache.for_home(home))  # the copy's own, empty cache
            report = consolidate(store, cached)
            cold.append(1000 * report.seconds / report.processed)
            cold_share.append(report.embedding_seconds / report.seconds)
            texts = _embedded_texts(store)
            t0 = time.perf_counter()
            model.embed(texts)
            pure.append(1000 * (time.perf_counter() - t0) / report.processed)
            last = (store, cached, report)
            # warm: a second copy of the corpus, same texts, cache already filled
            store2 = _copy(work / "template", work / f"w{rep}").corpus(CORPUS)
            report2 = consolidate(store2, cached)
            warm.append(1000 * report2.seconds / report2.processed)
        store, cached, report = last
        figures = _figures(store, cached, report)
        sample = metrics.concept_sample(store, limit=args.sample_size)
    finally:
        dispose_engines()
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "input": {"path": args.path, "format": source_format, "record": args.record, **built},
        "embedder": model.model_name,
        "mentions": report.processed,
        "repeats": args.repeats,
        "cold_seconds_per_1k_mentions": round(statistics.median(cold), 3),
        "embedding_share_cold": round(statistics.median(cold_share), 4),
        "warm_cache_seconds_per_1k_mentions": round(statistics.median(warm), 3),
        "pure_embedding_seconds_per_1k_mentions": round(statistics.median(pure), 3),
        "cold_over_pure_embedding": round(statistics.median(cold) / statistics.median(pure), 3),
        "retrieval_ms_by_concepts": retrieval_scaling(),
        "figures": figures,
    }
    print(json.dumps(out, indent=1))
    print("\n" + sample)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    if args.sample_md:
        Path(args.sample_md).write_text(sample + "\n", encoding="utf-8")


def _figures(store, embedder, report) -> dict:
    decisions: dict[str, dict[str, int]] = {}
    with store.staging.connect() as conn:
        for action, code in conn.execute(
            select(action_log.c.action, action_log.c.scores["reason_code"].as_string()).where(
                action_log.c.mention_id.is_not(None)
            )
        ):
            decisions.setdefault(action, {}).setdefault(code, 0)
            decisions[action][code] += 1
    purity = metrics.purity(store, embedder)
    return {
        **metrics.totals(store),
        **metrics.coverage(store),
        **{k: v for k, v in purity.items() if k != "purity_by_concept"},
        "grounding": metrics.grounding(store)["grounding"],
        **report.run_figures(),
        "actions": dict(report.actions),
        "decisions": {
            a: dict(sorted(c.items(), key=lambda kv: -kv[1])) for a, c in sorted(decisions.items())
        },
        "concepts_by_type_and_state": metrics.by_type_and_state(store),
        "embedding_seconds": round(report.embedding_seconds, 3),
        "retrieval_seconds": round(report.retrieval_seconds, 3),
        "write_seconds": round(report.write_seconds, 3),
        "loop_seconds": round(report.seconds, 3),
    }


def retrieval_scaling(sizes=(1_000, 10_000, 50_000, 100_000), dim=384, candidates=512, batch=256) -> dict:
    """Retrieval cost per candidate as the concept memory grows: one matrix-vector product per candidate,
    one matrix product per batch (`batch_similarities`, what the loop does up to `exact_up_to` concepts),
    and the inverted file's shortlist (what it does past that), with the share of candidates whose best
    concept the inverted file's shortlist finds as the exact one does."""
    import numpy as np

    from memory_core.memory_loop.retriever import ConceptIndex, RetrieverWeights

    rng = np.random.default_rng(0)
    t = datetime(2024, 1, 1)
    out = {}
    for n in sizes:
        vecs = rng.normal(size=(n, dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        exact = ConceptIndex(RetrieverWeights(exact_up_to=10**9), capacity=n)
        inverted = ConceptIndex(RetrieverWeights(exact_up_to=0), capacity=n)
        for i in range(n):
            for index in (exact, inverted):
                index.add(f"c{i}", vecs[i], "entity", [f"concept {i}"], t, t)
        # a restatement of a concept indexed (cosine ~0.9 to it), on unclustered vectors: the inverted
        # file's hard case (concept keys of a real corpus cluster)
        noise = 0.5 / math.sqrt(dim)
        queries = vecs[rng.integers(0, n, candidates)] + noise * rng.normal(size=(candidates, dim)).astype(
            np.float32
        )
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        t0 = time.perf_counter()
        for q in queries:
            exact.retrieve(q, ["concept 1"], t, "s", "c")
        single = time.perf_counter() - t0
        inverted.batch_similarities(queries[:1])  # trains the inverted file, once per size of memory
        best = {}
        seconds = {}
        for name, index in (("batched", exact), ("inverted", inverted)):
            t0 = time.perf_counter()
            for start in range(0, candidates, batch):
                chunk = queries[start : start + batch]
                presims = index.batch_similarities(chunk)
                for j, (q, row) in enumerate(zip(chunk, presims, strict=True)):
                    hits = index.retrieve(q, ["concept 1"], t, "s", "c", presims=row)
                    best[name, start + j] = hits[0].concept_id
            seconds[name] = time.perf_counter() - t0
        agree = sum(best["batched", i] == best["inverted", i] for i in range(candidates)) / candidates
        out[n] = {
            "per_candidate_ms": round(1000 * single / candidates, 3),
            "batched_ms": round(1000 * seconds["batched"] / candidates, 3),
            "inverted_ms": round(1000 * seconds["inverted"] / candidates, 3),
            "batched_over_inverted": round(seconds["batched"] / seconds["inverted"], 2),
            "inverted_best_agrees": round(agree, 4),
        }
    return out


def pattern_scaling(sizes=(10_000, 40_000, 80_000), dim=384, candidates=300) -> dict:
    """A held reflective candidate's search for episodes (`judge_pattern`) as one subject's facts grow: the
    facts sharing a content stem with it, as kept index rows gathered in one product (`close_facts`, what
    `judge_pattern` calls), against the per-fact lookups that came before (`related` sorted by first-seen,
    then a row lookup per fact: the baseline, computed here). At 1M generated messages (one subject, ~80k facts) the held candidates took 1,195 s.
    Both must find the same close facts in the same order."""
    import numpy as np

    from memory_core.memory_loop.patterns import _cosines, close_facts
    from memory_core.memory_loop.router import RouterRules
    from memory_core.memory_loop.support import fact_subject, salient_stems

    rng, threshold = np.random.default_rng(0), RouterRules().pattern_support_similarity
    out = {}
    for n in sizes:
        facts, index = _generated_facts(n, dim, rng)
        vectors = index.matrix[rng.integers(0, n, candidates)] + rng.normal(size=(candidates, dim)) / dim**0.5
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        hobbies = ("running", "climbing", "chess", "pottery")
        titles = [f"The user stopped {hobbies[i % 4]} because of my shoulder" for i in range(candidates)]
        subject, stems = fact_subject(titles[0]), [salient_stems(title) for title in titles]

        def close(sims: dict[str, float]) -> list[str]:
            return sorted((c for c, s in sims.items() if s >= threshold), key=lambda c: (-sims[c], c))

        t0 = time.perf_counter()
        before = []
        for vec, st in zip(vectors, stems, strict=True):
            related = [c for c in facts.related(subject, st) if c in index]
            before.append(close(_cosines(index, vec, related)))
        per_fact = time.perf_counter() - t0
        t0 = time.perf_counter()
        after = [
            close_facts(facts, index, subject, st, vec, threshold)
            for vec, st in zip(vectors, stems, strict=True)
        ]
        kept_rows = time.perf_counter() - t0
        sizes_seen = [len(facts.related_rows(subject, st, index)) for st in stems]
        out[n] = {
            "related_facts_median": int(np.median(sizes_seen)),
            "per_fact_ms": round(1000 * per_fact / candidates, 3),
            "kept_rows_ms": round(1000 * kept_rows / candidates, 3),
            "per_fact_over_kept_rows": round(per_fact / kept_rows, 2),
            "close_facts": sum(map(len, after)),
            "same_close_facts": before == after,
        }
    return out


def _generated_facts(n: int, dim: int, rng):
    """`n` facts of one subject ("The user ...", the lines bench_scale's corpus has the user say) with unit
    vectors, in a `SubjectFacts` and a `ConceptIndex` as the loop holds them."""
    import numpy as np

    from evals.benchmarks.bench_scale import USER_LINES
    from memory_core.concepts import ConceptHypothesis
    from memory_core.memory_loop.patterns import SubjectFacts
    from memory_core.memory_loop.retriever import ConceptIndex

    t = datetime(2024, 1, 1)
    words = dict(person="Ana Silva", city="Lisbon", project="Kestrel", tech="Rust", tech2="Go", hobby="chess")
    facts, index = SubjectFacts(), ConceptIndex(capacity=n)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for i in range(n):
        line = USER_LINES[i % len(USER_LINES)].format(**words).split(". ")[0].rstrip(".!?")
        title = f"The user {line.removeprefix('I ')} ({i})"
        fact = ConceptHypothesis(
            concept_id=f"f{i}", title=title, type="event", description=title + ".", state="active",
            trust="stable", confidence=0.6, aliases=[], evidence_spans=[], relations=[], revision_count=0,
            support_count=1, first_seen=t, last_seen=t, recorded_at=t, merged_into="",
        )  # fmt: skip
        index.add(fact.concept_id, vectors[i], fact.type, [title], t, t)
        facts.add(fact)
    return facts, index


def _embedded_texts(store) -> list[str]:
    """Every distinct text a cold run embeds: the candidates' keys (the created concepts' keys among them)
    and the keys of concepts whose description a refine rewrote (each revision's key is embedded)."""
    with store.staging.connect() as conn:
        keys = {
            concept_embedding_key(r.title, r.description)
            for r in conn.execute(select(mentions.c.title, mentions.c.description))
        }
        titles = dict(conn.execute(select(canonical_concepts.c.concept_id, canonical_concepts.c.title)).all())
        for cid, state in conn.execute(
            select(action_log.c.concept_id, action_log.c.new_state).where(action_log.c.action == "refine")
        ):
            if "description" in (state or {}):
                keys.add(concept_embedding_key(titles[cid], state["description"]))
        for r in conn.execute(select(canonical_concepts.c.title, canonical_concepts.c.description)):
            keys.add(concept_embedding_key(r.title, r.description))
    return sorted(keys)


if __name__ == "__main__":
    main()
