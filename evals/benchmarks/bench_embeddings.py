"""Choose the local embedder's batch size and torch threads by measurement.

Embeds real LoCoMo texts of two shapes — short concept keys ("Speaker: turn", ~20 tokens, what the memory
loop embeds) and long segment-like texts (several turns joined, ~150 tokens, what topics and indexes embed)
— for each (threads, batch size) pair. Configurations are interleaved round-robin inside every repeat, so
on a shared machine each one sees the same background load; prints the median texts/s per configuration
and its ratio to the sentence-transformers default (batch 32, all cores) measured in the same run.

    python -m evals.benchmarks.bench_embeddings ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder


def locomo_texts(path: str, n_short: int, n_long: int) -> tuple[list[str], list[str]]:
    turns: list[str] = []
    for sample in json.load(open(path, encoding="utf-8")):
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and isinstance(conv[k], list)):
            turns += [f"{t['speaker']}: {t['text']}" for t in conv[key]]
    longs = ["\n".join(turns[i : i + 6]) for i in range(0, len(turns) - 6, 6)]
    return turns[:n_short], longs[:n_long]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("locomo")
    ap.add_argument("--short", type=int, default=1000)
    ap.add_argument("--long", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batches", default="16,32,64,128,256")
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    short, long = locomo_texts(args.locomo, args.short, args.long)
    import torch

    emb = SentenceTransformerEmbedder()
    emb.embed(["warm up"])
    configs = [(int(t), int(b)) for t in args.threads.split(",") for b in args.batches.split(",")]
    runs: dict[tuple, list[float]] = {}
    for _ in range(args.repeats):
        for threads, batch in configs:
            torch.set_num_threads(threads)
            emb.batch_size = batch
            for shape, texts in (("short", short), ("long", long)):
                t0 = time.perf_counter()
                emb.embed(texts)
                runs.setdefault((threads, batch, shape), []).append(len(texts) / (time.perf_counter() - t0))
    results = []
    for (threads, batch, shape), values in runs.items():
        results.append(
            {
                "threads": threads,
                "batch": batch,
                "shape": shape,
                "texts_per_s": round(statistics.median(values), 1),
            }
        )
        print(json.dumps(results[-1]), flush=True)
    for shape in ("short", "long"):
        rows = [r for r in results if r["shape"] == shape]
        base = next(
            (r for r in rows if r["batch"] == 32 and r["threads"] == max(r2["threads"] for r2 in rows)),
            rows[0],
        )
        best = max(rows, key=lambda r: r["texts_per_s"])
        print(
            f"{shape}: best threads={best['threads']} batch={best['batch']} {best['texts_per_s']:.0f} texts/s "
            f"= {best['texts_per_s'] / base['texts_per_s']:.2f}x the default (batch 32, {base['threads']} threads)"
        )


if __name__ == "__main__":
    main()
