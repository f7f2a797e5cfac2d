"""How the pipeline's cost grows with the corpus: a generated ChatGPT export of N messages (many
conversations, realistic lengths, people, places, projects and preferences that recur across them) through
ingestion, segments, offline extraction, consolidation, graph and indexes, then `query_memory` latency —
for each N in `--sizes` (default 10k and 100k; 1M when asked), each size built in its own process so its
peak RSS is its own.

    nice -n 10 python -m evals.benchmarks.bench_scale --sizes 10000,100000 [--queries 200] [--keep DIR]
    nice -n 10 python -m evals.benchmarks.bench_scale --sizes 100000,1000000 --read-side   # no concepts

Per size: wall seconds per stage (the run's step times), peak RSS of the build process, query p50/p95 over
a warm reader pool, and per stage the growth exponent between consecutive sizes (log(t2/t1)/log(n2/n1):
1.0 is linear). Embeddings are the 384-d hashing embedder so the curve is the pipeline's own; the MiniLM
cost is measured as throughput on this machine and multiplied out (`minilm_embed_s_est`), not run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from evals.benchmarks.common import peak_rss_mib, print_table

STAGES = ["messages", "segments", "mentions", "user_reactions", "canonical_concepts", "graph", "indexes"]
# `--read-side`: what a query reads of a corpus without concepts — 1M messages through these fit a session on
# two cores, where offline extraction and consolidation at 1M would take hours
READ_SIDE = ["messages", "segments", "graph", "indexes"]
# the steps of those assets (the extraction op writes `mentions` and `user_reactions`); the rest are checks
STEPS = ["messages", "segments", "extraction", "canonical_concepts", "graph", "indexes"]

PEOPLE = [f"{a} {b}" for a in ("Ana", "Ben", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines",
          "Jonas", "Kira", "Liam", "Maya", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tomas")
          for b in ("Silva", "Okafor", "Tanaka", "Meyer", "Novak", "Haddad", "Kowalski", "Moreau")]  # fmt: skip
CITIES = ("Lisbon Porto Kyoto Osaka Berlin Munich Oslo Bergen Lima Cusco Quito Nairobi Accra Dakar Hanoi "
          "Seoul Busan Austin Denver Boston Toronto Calgary Dublin Galway Krakow Prague Vienna").split()  # fmt: skip
PROJECTS = ("Kestrel Heron Osprey Falcon Condor Swift Puffin Plover Tern Ibis Egret Raven Wren Finch Lark "
            "Merlin Kite Harrier Gannet Petrel").split()  # fmt: skip
TECH = ("PostgreSQL DuckDB SQLite Redis Kafka Spark Airflow Dagster Terraform Kubernetes FastAPI Django React "
        "Svelte Rust Go Python TypeScript").split()  # fmt: skip
HOBBIES = "running climbing painting pottery chess cycling swimming baking gardening sailing".split()
USER_LINES = (
    "I met {person} in {city} last week and we talked about the {project} launch.",
    "My sister {person} just moved to {city} for a new job.",
    "We decided to use {tech} for the {project} dashboard instead of {tech2}.",
    "I'm training for the {city} marathon but my knee hurts after long runs.",
    "I really love {hobby} on weekends, it keeps me sane.",
    "{person} is leading the {project} migration to {tech} this quarter.",
    "Can you help me plan a trip to {city} in the spring?",
    "I stopped {hobby} because of my shoulder, which is frustrating.",
    "The {project} budget review with {person} is on Friday.",
    "I prefer {tech} over {tech2} for analytics work.",
)
FILLER = ("that makes sense and there are a few things worth considering here first the timeline then the "
          "budget and finally who owns each part of the work so that nothing falls through the cracks when "
          "the plan changes later on we can also look at the tradeoffs in more detail").split()  # fmt: skip


def _user_text(rng: random.Random) -> str:
    picks = dict(
        person=rng.choice(PEOPLE), city=rng.choice(CITIES), project=rng.choice(PROJECTS),
        tech=rng.choice(TECH), tech2=rng.choice(TECH), hobby=rng.choice(HOBBIES),
    )  # fmt: skip
    lines = [rng.choice(USER_LINES).format(**picks) for _ in range(rng.choice((1, 1, 2, 3)))]
    return " ".join(lines)


def _assistant_text(rng: random.Random) -> str:
    n = int(min(400, rng.lognormvariate(4.2, 0.6)))  # median ~65 words, a long tail
    words = [rng.choice(FILLER) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def generate_export(path: Path, n_messages: int, seed: int = 16) -> int:
    """A ChatGPT-shaped export of `n_messages` (conversations of 4-120 turns, lognormal); returns how many
    conversations."""
    rng = random.Random(seed)
    t = 1_700_000_000.0
    made = conversations = 0
    with path.open("w", encoding="utf-8") as fp:
        fp.write("[")
        while made < n_messages:
            count = min(n_messages - made, max(4, int(rng.lognormvariate(3.0, 0.7))))
            cid = str(uuid.UUID(int=rng.getrandbits(128)))
            root = f"{cid}-root"
            mapping = {root: {"id": root, "message": None, "parent": None, "children": []}}
            parent = root
            for i in range(count):
                nid = str(uuid.UUID(int=rng.getrandbits(128)))
                role = "user" if i % 2 == 0 else "assistant"
                text = _user_text(rng) if role == "user" else _assistant_text(rng)
                t += rng.uniform(20, 600)
                mapping[nid] = {
                    "id": nid, "parent": parent, "children": [],
                    "message": {
                        "id": nid, "author": {"role": role}, "create_time": t,
                        "content": {"content_type": "text", "parts": [text]}, "metadata": {}, "recipient": "all",
                    },
                }  # fmt: skip
                mapping[parent]["children"].append(nid)
                parent = nid
            conv = {"id": cid, "title": f"chat {conversations}", "create_time": t, "mapping": mapping}
            fp.write(("" if conversations == 0 else ",") + json.dumps(conv))
            made += count
            conversations += 1
            t += rng.uniform(3600, 86400)
        fp.write("]")
    return conversations


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def build_and_measure(root: Path, n: int, queries: int, stages: list[str] = STAGES) -> dict:
    """In a process of its own: generate, build, query; the figures of this size."""
    import dagster as dg

    from memory_assets.instance import local_storage
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.store.db import MemoryHome
    from memory_query import ReaderPool, query_memory
    from memory_resources.embeddings import EmbeddingsResource

    root.mkdir(parents=True, exist_ok=True)
    export = root / f"gen{n}.json"
    started = time.perf_counter()
    conversations = generate_export(export, n)
    generate_s = time.perf_counter() - started
    home = MemoryHome.resolve(root / "home")
    (root / "dagster").mkdir(exist_ok=True)
    hashing = EmbeddingsResource(provider="hashing", hashing_dim=384)
    with dg.instance_for_test(
        temp_dir=str(root / "dagster"), overrides={"storage": local_storage(str(root / "dagster"))}
    ) as instance:
        runner = CorpusRunner(home, instance, resources={"embeddings": hashing})
        runner.register(plan_corpora("scale", export, "chatgpt"))
        run = runner.materialize("scale", stages, progress=sys.stderr)
        steps = run.step_seconds()
    build_rss = peak_rss_mib()
    rng = random.Random(5)
    texts = [_user_text(rng) for _ in range(queries)]
    pool = ReaderPool(home)
    query_memory(texts[0], "scale", k=10, pool=pool)  # warm: tables, indexes
    times = []
    for q in texts:
        t0 = time.perf_counter()
        query_memory(q, "scale", k=10, pool=pool)
        times.append((time.perf_counter() - t0) * 1000)
    from sqlalchemy import func, select

    from memory_core.store.schema import canonical_concepts, mentions, segments

    store = home.corpus("scale", readonly=True)
    with store.staging.connect() as conn:
        counts = {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one() for t in (segments, mentions, canonical_concepts)}  # fmt: skip
    return {
        "messages": n,
        "conversations": conversations,
        **counts,
        "success": run.success,
        "generate_s": round(generate_s, 1),
        "build_s": round(run.seconds, 1),
        "stages": {k: round(v, 1) for k, v in steps.items()},
        "build_peak_rss_mib": round(build_rss),
        "peak_rss_mib": round(peak_rss_mib()),
        "query_p50_ms": round(_percentile(times, 0.5), 1),
        "query_p95_ms": round(_percentile(times, 0.95), 1),
        "export_mib": round(export.stat().st_size / 2**20, 1),
    }


def minilm_texts_per_s(sample: int = 256) -> float:
    from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder

    rng = random.Random(3)
    texts = [_user_text(rng) if i % 2 else _assistant_text(rng) for i in range(sample)]
    emb = SentenceTransformerEmbedder()
    emb.embed(texts[:8])
    t0 = time.perf_counter()
    emb.embed(texts)
    return sample / (time.perf_counter() - t0)


def _stage_seconds(result: dict) -> dict:
    """Seconds per step of STEPS, and the asset checks together."""
    steps = result["stages"]
    out = {f"{step}_s": steps[step] for step in STEPS if step in steps}
    out["checks_s"] = round(sum(v for k, v in steps.items() if k not in STEPS), 1)
    return out


def _exponent(a: float, b: float, ratio: float) -> float | str:
    return round(math.log(b / a) / ratio, 2) if a > 0.5 and b > 0 else "-"  # below 0.5 s: fixed overhead


def report(results: list[dict], minilm_rate: float | None) -> None:
    rows = []
    for r in results:
        row = {k: r[k] for k in ("messages", "conversations", "segments", "mentions", "canonical_concepts")}
        row |= _stage_seconds(r)
        row |= {k: r[k] for k in ("build_s", "build_peak_rss_mib", "query_p50_ms", "query_p95_ms")}
        if minilm_rate:
            row["minilm_embed_s_est"] = round((r["messages"] + r["segments"]) / minilm_rate)
        rows.append(row)
    print_table(rows)
    growth = []
    for a, b in zip(results, results[1:], strict=False):
        ratio = math.log(b["messages"] / a["messages"])
        sa, sb = _stage_seconds(a), _stage_seconds(b)
        row = {"from": a["messages"], "to": b["messages"]}
        row |= {k: _exponent(sa[k], sb[k], ratio) for k in sa if k in sb}
        row["build_s"] = _exponent(a["build_s"], b["build_s"], ratio)
        row["rss"] = _exponent(a["build_peak_rss_mib"], b["build_peak_rss_mib"], ratio)
        growth.append(row)
    if growth:
        print("\ngrowth exponent per stage, log(t2/t1)/log(n2/n1) (1.0 = linear):")
        print_table(growth)
    if minilm_rate:
        print(
            f"\nMiniLM on this machine: {minilm_rate:.0f} texts/s (estimate = (messages + segments) / rate)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--keep", type=Path, help="build under this folder and keep it")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: one size in this process
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--no-minilm", action="store_true", help="skip the MiniLM throughput measurement")
    ap.add_argument(
        "--read-side", action="store_true", help=f"build only {', '.join(READ_SIDE)} (no concepts)"
    )
    args = ap.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    stages, tag = (READ_SIDE, "-read-side") if args.read_side else (STAGES, "")
    if args.one:
        result = build_and_measure(root / f"n{args.one}{tag}", args.one, args.queries, stages)
        args.out.write_text(json.dumps(result), encoding="utf-8")
        return 0
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        out = root / f"result-{n}{tag}.json"
        if args.keep and out.exists():  # built by an earlier invocation on this folder: reuse its figures
            results.append(json.loads(out.read_text()))
            continue
        command = [sys.executable, "-m", "evals.benchmarks.bench_scale", "--one", str(n), "--out", str(out)]
        command += ["--read-side"] if args.read_side else []
        subprocess.run([*command, "--queries", str(args.queries), "--keep", str(root)], check=True)
        results.append(json.loads(out.read_text()))
        print(json.dumps(results[-1]), file=sys.stderr)
    from memory_core.settings import offline_model_hub

    offline_model_hub()
    rate = None if args.no_minilm else minilm_texts_per_s()
    report(results, rate)
    print(f"data in {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
