"""`memory-os eval retrieval|qa`: the LongMemEval / LoCoMo harness (`evals/`). Everything heavy is imported
inside the commands, so `memory-os --help` stays fast."""

from __future__ import annotations

import click

from memory_core import settings
from memory_core.errors import InputError

BENCHMARK_CHOICE = click.Choice(["longmemeval", "locomo"])
EMBEDDER_CHOICE = click.Choice(["minilm", "hashing"])


def _require_eval_extra() -> None:
    """The harness's BM25 baseline and LoCoMo's scorer need the `eval` extra (not the product)."""
    import importlib.util

    missing = [name for name in ("bm25s", "nltk") if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(
            f"`memory-os eval` needs the eval extra ({', '.join(missing)} missing): pip install 'memory-os[eval]'"
        )


def _question_ids(text: str | None) -> list[str] | None:
    return [q.strip() for q in text.split(",") if q.strip()] if text else None


def _load(benchmark: str, data: str, limit: int | None, question_ids: str | None, split: str = "all"):
    _require_eval_extra()
    from evals.datasets import load_benchmark, select
    from evals.splits import in_split

    haystacks = in_split(select(load_benchmark(benchmark, data), limit, _question_ids(question_ids)), split)
    if not haystacks:
        raise InputError("no question selected")
    return haystacks


def _selection_options(fn):
    fn = click.option(
        "--split",
        type=click.Choice(["tune", "confirm", "all"]),
        default="all",
        show_default=True,
        help="the dev tuning split (evals/splits.py): choose weights on `tune`, confirm them on `confirm`",
    )(fn)
    fn = click.option(
        "--question-ids", help="comma-separated question ids (a LoCoMo sample id picks its conversation)"
    )(fn)
    fn = click.option(
        "--limit",
        type=click.IntRange(min=1),
        help="first N records of the file (LongMemEval questions, LoCoMo conversations)",
    )(fn)
    fn = click.option(
        "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="output folder"
    )(fn)
    fn = click.option(
        "--data", required=True, type=click.Path(exists=True, dir_okay=False), help="benchmark JSON file"
    )(fn)
    fn = click.option("--benchmark", required=True, type=BENCHMARK_CHOICE)(fn)
    return fn


@click.group("eval")
def eval_group() -> None:
    """LongMemEval / LoCoMo evaluation: retrieval metrics against flat baselines, and QA with an LLM."""


def _retrieve(ctx, benchmark, data, out_dir, haystacks, methods, embedder, embedding_cache=True):
    from evals.harness import run_retrieval
    from evals.methods import make_retrievers, parse_methods

    names = parse_methods(methods)
    home = ctx.obj["home"]

    def builder():
        from evals.pipeline import pipeline_corpus_builder

        return pipeline_corpus_builder(home, benchmark, str(data))

    retrievers = make_retrievers(
        names, benchmark, embedder, corpus_builder=builder, embedding_cache=home if embedding_cache else None
    )
    return run_retrieval(
        benchmark, data, haystacks, retrievers, out_dir, log=lambda m: click.echo(m, err=True)
    )


@eval_group.command("retrieval")
@_selection_options
@click.option(
    "--methods",
    default="memory,bm25,dense",
    show_default=True,
    help="memory, memory_flat (memory without the concept, topic and graph paths, same corpora), agent (the "
    "agent loop's submitted evidence, offline driver, same corpora), bm25, dense, bm25_user, dense_user (the "
    "*_user ones: LongMemEval, user turns only)",
)
@click.option(
    "--embedder",
    default="minilm",
    show_default=True,
    type=EMBEDDER_CHOICE,
    help="dense baseline embedder (hashing: tests only)",
)
@click.option(
    "--embedding-cache/--no-embedding-cache",
    default=True,
    show_default=True,
    help="keep dense turn vectors in the memory home's shared embedding cache (off: every run embeds afresh)",
)
@click.pass_context
def eval_retrieval(
    ctx, benchmark, data, out_dir, split, limit, question_ids, methods, embedder, embedding_cache
) -> None:
    """Rank each question's haystack with each method; write retrievals.jsonl, report.json, report.md to OUT.

    LongMemEval: one corpus per question (its haystack), asked at its question_date. LoCoMo: one corpus per
    conversation. The memory method builds each corpus through the pipeline in the memory home.
    """
    from evals.metrics import LEVELS, UPDATE_LEVEL

    haystacks = _load(benchmark, data, limit, question_ids, split)
    run = _retrieve(ctx, benchmark, data, out_dir, haystacks, methods, embedder, embedding_cache)
    for method, entry in run.report["methods"].items():
        parts = []
        for level in LEVELS:
            if level in entry:
                o = entry[level]["overall"]
                parts.append(
                    f"{level} recall_any@5 {o['recall_any@5']:.3f} recall_all@5 {o['recall_all@5']:.3f} ndcg@10 {o['ndcg@10']:.3f}"
                )
        if UPDATE_LEVEL in entry:
            o = entry[UPDATE_LEVEL]["overall"]
            parts.append(f"latest_first {o['latest_first']:.3f} (n={o['n']})")
        click.echo(f"{method}: " + "; ".join(parts or ["no scored question"]))
    click.echo(f"{run.questions} questions in {run.wall_seconds:.1f}s → {out_dir}/report.md")


@eval_group.command("qa")
@_selection_options
@click.option(
    "--method",
    default="bm25",
    show_default=True,
    help="retrieval method whose evidence the reader gets; agent: the agent loop answers itself (LLM driver "
    "on --model)",
)
@click.option(
    "--retrievals",
    type=click.Path(exists=True, dir_okay=False),
    help="use this retrievals.jsonl instead of retrieving now",
)
@click.option(
    "--context-turns",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="retrieved turns given to the reader",
)
@click.option(
    "--model",
    envvar=settings.MEMORY_OS_EVAL_READER_MODEL.name,
    default=settings.MEMORY_OS_EVAL_READER_MODEL.default,
    show_default=True,
    help="reader model",
)
@click.option(
    "--judge-model",
    envvar=settings.MEMORY_OS_EVAL_JUDGE_MODEL.name,
    default=settings.MEMORY_OS_EVAL_JUDGE_MODEL.default,
    show_default=True,
    help="LongMemEval judge model",
)
@click.option("--embedder", default="minilm", show_default=True, type=EMBEDDER_CHOICE)
@click.pass_context
def eval_qa(
    ctx,
    benchmark,
    data,
    out_dir,
    split,
    limit,
    question_ids,
    method,
    retrievals,
    context_turns,
    model,
    judge_model,
    embedder,
) -> None:
    """Answer each question from retrieved evidence with an LLM reader (or, with --method agent, by the agent
    loop with the LLM driver) and score the answers (LongMemEval: LLM judge per question type; LoCoMo: token
    F1). Needs OPENAI_API_KEY (OPENAI_BASE_URL for other endpoints).
    Writes hypotheses.jsonl ({"question_id", "hypothesis"}), qa_results.jsonl, qa_report.json to OUT; a rerun
    into the same OUT resumes (answered questions are not asked again)."""
    from evals.qa.llm import ChatModel
    from evals.qa.run import load_rankings, reader_answerer, run_qa

    reader = ChatModel.from_environment(model)  # fails with a clear message before any work without a key
    judge = ChatModel.from_environment(judge_model) if benchmark == "longmemeval" else None
    haystacks = _load(benchmark, data, limit, question_ids, split)
    if method == "agent":
        from evals.pipeline import pipeline_corpus_builder
        from evals.qa.agent import agent_answerer

        home = ctx.obj["home"]
        answerer = agent_answerer(home, pipeline_corpus_builder(home, benchmark, str(data)), model)
    else:
        if retrievals is None:
            _retrieve(ctx, benchmark, data, out_dir, haystacks, method, embedder)
            from pathlib import Path

            retrievals = str(Path(out_dir) / "retrievals.jsonl")
        answerer = reader_answerer(benchmark, load_rankings(retrievals, method), reader, context_turns)
    summary = run_qa(benchmark, haystacks, answerer, judge, out_dir, log=lambda m: click.echo(m, err=True))
    click.echo(
        f"{summary['answered']} answered, accuracy/F1 {summary['overall']['score']:.3f} → {out_dir}/qa_report.json"
    )
