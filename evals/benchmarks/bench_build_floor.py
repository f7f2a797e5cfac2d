"""Benchmark: building LongMemEval haystacks through every asset, against the embedding floor, measured in the
same run (issue 19: build ≤ 2× the floor; an unchanged re-materialisation ≤ 0.10× the build).

    python -m evals.benchmarks.bench_build_floor --data ../shared/data/longmemeval/longmemeval_s_dev.json \
        [--haystacks 3 | --question-ids A,B,C] [--repeats 1] [--baseline-code /path/to/other/checkout]

The floor: embedding the haystack's turns with the same MiniLM model, already loaded, batch 32 (this process,
untimed model load; float32, sentence-transformers' own arithmetic, whatever the build uses). Where the
build's arithmetic is not float32 (`MEMORY_OS_EMBED_PRECISION`, bfloat16 by default where the CPU has it),
the same turns embedded at that arithmetic are a second floor, reported beside the first. The build: a
fresh process (`--worker`) that builds the haystack into a fresh memory home with every asset of the code
location through the project's runner on the packaged Dagster instance (its dagster.yaml in the fresh home) —
the way `memory-os materialize` runs, imports and the model's load included — then materialises it again
unchanged. Its wall time, per-asset
seconds (Dagster's step events) and the topic tuner's figures come back as JSON. Fresh homes share one numba
cache folder (linked as `<home>/cache/numba`), compiled by an untimed first build: a user's machine compiles
UMAP's kernels once, not per corpus (the first compile is printed separately). The embedding cache is the
fresh home's own: nothing a previous repeat embedded is reused.

With `--baseline-code`, every build also runs on that checkout's code (its packages first on the worker's
path), interleaved with this one's, so "before" and "after" see the same machine load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES_SHOWN = (
    "messages",
    "segments",
    "extraction",
    "canonical_concepts",
    "topics",
    "weighted_links",
    "domains",
    "graph",
    "indexes",
    "gardener_triage",
    "gardener_actions",
)


def worker(data: str, question_id: str, home_dir: str, numba: str | None, embedder: str) -> dict:
    """Build one haystack in a fresh home (this process), then again unchanged; figures as a dict."""
    started = time.perf_counter()

    from evals.datasets import load_longmemeval, select
    from evals.pipeline import pipeline_corpus_builder
    from memory_assets.instance import memory_instance
    from memory_assets.runner import CorpusRunner
    from memory_core.settings import use_dagster_home
    from memory_core.store.db import MemoryHome

    (haystack,) = select(load_longmemeval(data), question_ids=[question_id])
    home = MemoryHome.resolve(Path(home_dir))
    if numba:
        home.cache_dir.joinpath("numba").symlink_to(numba, target_is_directory=True)
    # the instance `memory-os materialize` uses (the packaged dagster.yaml, its storage included), in the home
    use_dagster_home(Path(home_dir) / "dagster")
    with memory_instance(home) as instance:
        resources = {}
        if embedder == "hashing":  # tests: the build's own embedder is the floor's
            from memory_resources.embeddings import EmbeddingsResource

            resources["embeddings"] = EmbeddingsResource(provider="hashing", hashing_dim=256)
        runner = CorpusRunner(home, instance, resources=resources)
        build = pipeline_corpus_builder(home, "longmemeval", data, runner)
        t0 = time.perf_counter()
        corpus = build(haystack)
        build_seconds = time.perf_counter() - t0
        total = time.perf_counter() - started
        purity = _purity_figures(instance)
        t0 = time.perf_counter()
        build(haystack)
        rebuild_seconds = time.perf_counter() - t0
        topics = _topics_figures(corpus.store)
        identity = output_digests(corpus.store)
    return {
        "wall_seconds": total,  # process start → built: imports, model load and every asset
        "build_seconds": build_seconds,  # the run alone
        "rebuild_seconds": rebuild_seconds,
        "stages": corpus.stage_seconds,
        "topics": topics,
        "purity": purity,
        "identity": identity,
    }


# what a speed-only change must leave as it was: the concept memory and the topics, without the columns a run
# stamps (times, run and action ids)
_DIGESTED = {
    "canonical_concepts": ("concept_id",),
    "concept_evidence": ("concept_id", "mention_id"),
    "action_log": ("concept_id", "mention_id", "action"),
    "topics": ("topic_id",),
    "topic_segments": ("segment_id",),
}
_STAMPS = frozenset({"recorded_at", "run_id", "action_id", "built_at", "created_at", "updated_at"})


def _scrub(value):
    if isinstance(value, str) and value[:1] in "[{":
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in sorted(value.items()) if k not in _STAMPS}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, bytes | memoryview):
        return hashlib.md5(bytes(value)).hexdigest()
    return value


def output_digests(store) -> dict[str, str]:
    """md5 of each table's sorted rows, stamps left out: equal digests = the same concepts and topics."""
    from sqlalchemy import select

    from memory_core.store import schema

    out = {}
    with store.staging.connect() as conn:
        for name in _DIGESTED:
            table = getattr(schema, name)
            columns = [c for c in table.c if c.name not in _STAMPS]
            rows = sorted(
                json.dumps([_scrub(r[c.name]) for c in columns], default=str)
                for r in conn.execute(select(*columns)).mappings()
            )
            out[name] = hashlib.md5("\n".join(rows).encode()).hexdigest()[:12]
    return out


def _purity_figures(instance) -> dict:
    """The consolidation report's purity figures of the build (its canonical_concepts materialisation)."""
    import dagster as dg

    event = instance.get_latest_materialization_event(dg.AssetKey("canonical_concepts"))
    if event is None or event.asset_materialization is None:
        return {}
    figures = {}
    for key, entry in event.asset_materialization.metadata.items():
        value = getattr(entry, "value", entry)
        if isinstance(value, dict) and key == "figures":
            figures.update(value)
        else:
            figures[key.split("/")[-1]] = value
    return {k: figures.get(k) for k in ("purity", "purity_min", "impure_concepts", "purity_sample")}


def _topics_figures(store) -> dict:
    from sqlalchemy import select

    from memory_core.store.schema import topic_builds

    with store.staging.connect() as conn:
        row = conn.execute(
            select(topic_builds.c.figures)
            .where(topic_builds.c.stage == "topics")
            .order_by(topic_builds.c.build_id)
        ).first()
    f = row[0] if row else {}
    keys = (
        "segments",
        "topics",
        "silhouette",
        "noise_ratio",
        "objective",
        "trials_run",
        "stopped",
        "truncated",
        "tune_seconds",
        "umap_warmup_seconds",
        "embed_seconds",
    )
    return {k: f.get(k) for k in keys}


def run_worker(code_root: Path, data: str, question_id: str, numba: Path | None, embedder: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="memory-os-bench-") as tmp:
        from memory_core.settings import child_environment

        env = child_environment(PYTHONPATH=str(code_root))
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            "--data",
            data,
            "--question-ids",
            question_id,
            "--embedder",
            embedder,
            "--home",
            tmp,
        ]
        if numba is not None:
            command += ["--numba", str(numba)]
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=code_root)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"worker failed ({code_root}):\n{done.stderr[-4000:]}")
        out = json.loads(done.stdout.strip().splitlines()[-1])
        out["process_seconds"] = seconds
        return out


def compile_umap(code_root: Path, numba: Path) -> float:
    """What the first build on a machine pays once: a fresh process compiling UMAP into `numba`."""
    from memory_core.settings import child_environment

    code = (
        "from pathlib import Path\n"
        "from memory_core.topics.clustering import warm_up_umap\n"
        f"print(warm_up_umap(42, 384, Path({str(numba)!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=child_environment(PYTHONPATH=str(code_root)),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def floor_seconds(embedder, texts: list[str]) -> float:
    t0 = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - t0


def _build_arithmetic(embedder: str):
    """The build's own runtime at its arithmetic, loaded, when that arithmetic is not the floor's float32."""
    if embedder != "minilm":
        return None
    from memory_core.embeddings import TorchBertEmbedder

    runtime = TorchBertEmbedder(batch_size=32)
    if runtime.precision == "float32":
        return None
    runtime.embed(["warm up"])
    return runtime


def _median(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def report(name: str, floors: list[float], builds: list[dict], same_arithmetic: list[float]) -> None:
    floor = _median(floors)
    wall = _median(b["wall_seconds"] for b in builds)
    run = _median(b["build_seconds"] for b in builds)
    rebuild = _median(b["rebuild_seconds"] for b in builds)
    print(
        f"  [{name}] build {wall:.1f}s = {wall / floor:.2f}x the floor (process start to built; the run "
        f"alone {run:.1f}s = {run / floor:.2f}x); unchanged re-materialisation {rebuild:.1f}s = "
        f"{rebuild / run:.3f}x the run"
    )
    if same_arithmetic:
        print(
            f"  [{name}] build = {wall / _median(same_arithmetic):.2f}x the floor at the build's arithmetic"
        )
    stages = {s: _median(b["stages"].get(s) for b in builds) for s in STAGES_SHOWN}
    for stage, seconds in stages.items():
        print(f"  [{name}] {stage}: median {seconds:.2f}s")
    print(f"  [{name}] topics: {builds[-1]['topics']}")
    print(f"  [{name}] purity: {builds[-1].get('purity')}")
    print(f"  [{name}] output digests: {builds[-1].get('identity')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--haystacks", type=int, default=3, help="the first N questions of the file")
    parser.add_argument("--question-ids", help="comma-separated; overrides --haystacks")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--baseline-code", type=Path, help="another checkout: its build, interleaved")
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "hashing"), help="hashing: tests")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--numba", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.data, args.question_ids, args.home, args.numba, args.embedder)))
        return 0

    from evals.datasets import load_longmemeval, select
    from memory_core.embeddings import HashingEmbedder, SentenceTransformerEmbedder

    haystacks = load_longmemeval(args.data)
    chosen = (
        select(haystacks, question_ids=args.question_ids.split(","))
        if args.question_ids
        else haystacks[: args.haystacks]
    )
    this_code = Path(__file__).resolve().parents[2]
    codes = {"this": this_code, **({"baseline": args.baseline_code.resolve()} if args.baseline_code else {})}
    embedder = (
        SentenceTransformerEmbedder(batch_size=32) if args.embedder == "minilm" else HashingEmbedder(256)
    )
    embedder.embed(["warm up"])  # the floor's model is loaded beforehand, untimed
    arithmetic = _build_arithmetic(args.embedder)
    with tempfile.TemporaryDirectory(prefix="memory-os-numba-") as numba:
        if args.embedder == "minilm":  # (hashing: tests' tiny haystacks take the small-input paths, no UMAP)
            print(
                f"compiling UMAP's kernels into an empty numba cache (once per machine; untimed below): "
                f"{compile_umap(this_code, Path(numba)):.1f}s",
                flush=True,
            )
        for haystack in chosen:
            texts = [t.text for t in haystack.turns]
            floors: list[float] = []
            same_arithmetic: list[float] = []
            builds: dict[str, list[dict]] = {name: [] for name in codes}
            for _ in range(args.repeats):
                floors.append(floor_seconds(embedder, texts))
                if arithmetic is not None:
                    same_arithmetic.append(floor_seconds(arithmetic, texts))
                for name, root in codes.items():
                    builds[name].append(
                        run_worker(
                            root,
                            args.data,
                            haystack.haystack_id,
                            Path(numba),  # both: a baseline compiling UMAP itself would pay ~8 s more
                            args.embedder,
                        )
                    )
                floors.append(floor_seconds(embedder, texts))  # before and after: the load both saw
                if arithmetic is not None:
                    same_arithmetic.append(floor_seconds(arithmetic, texts))
            print(
                f"haystack {haystack.haystack_id}: {len(texts)} turns, {sum(map(len, texts))} chars; floor "
                f"(embedding its turns, {embedder.model_name}, batch 32, model loaded) median "
                f"{_median(floors):.1f}s of {len(floors)}"
                + (
                    f"; at the build's arithmetic ({arithmetic.precision}) {_median(same_arithmetic):.1f}s"
                    if arithmetic is not None
                    else ""
                ),
                flush=True,
            )
            for name in codes:  # (the baseline checkout's arithmetic is not known here: its ratio alone)
                report(name, floors, builds[name], same_arithmetic if name == "this" else [])
            if "baseline" in codes:
                same = {
                    table: builds["this"][-1]["identity"].get(table) == digest
                    for table, digest in builds["baseline"][-1]["identity"].items()
                }
                print(f"  outputs identical to the baseline's: {same}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
