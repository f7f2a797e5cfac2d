"""`memory-os`: register corpora, build them, inspect them, query them.

Commands that touch the orchestrator import Dagster lazily, so `query` and `serve-mcp` start without it.
"""

from __future__ import annotations

import json
import sys
import warnings

import click

from memory_cli.ask_cmd import ask_command
from memory_cli.eval_cmd import eval_group
from memory_cli.explore_cmd import explore_command
from memory_cli.listing import echo_rows, staging_rows
from memory_cli.query_cmd import query_command, render_answer
from memory_cli.reactions_cmd import reactions_group
from memory_cli.revision_cmd import facts_command, repairs_group
from memory_core import settings
from memory_core.errors import InputError, MemoryOSError
from memory_core.store.db import MemoryHome


def _home(ctx: click.Context) -> MemoryHome:
    return ctx.obj["home"]


class _Cli(click.Group):
    """Turns errors raised on purpose into one clear line and a non-zero exit."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except MemoryOSError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Cli)
@click.option(
    "--home",
    envvar=settings.MEMORY_OS_HOME.name,
    type=click.Path(file_okay=False),
    help="memory home (default ~/.memory_os)",
)
@click.option(
    "--database-url",
    envvar=settings.MEMORY_OS_DATABASE_URL.name,
    help="SQLAlchemy URL template with {corpus} and {store}",
)
@click.pass_context
def cli(ctx: click.Context, home: str | None, database_url: str | None) -> None:
    """Memory OS: a revisable, provable memory built from chat histories."""
    ctx.ensure_object(dict)
    ctx.obj["home"] = MemoryHome.resolve(home, database_url)
    # Dagster marks some APIs this project relies on (partitioned asset checks) as preview: say it once in the
    # README, not on every command
    warnings.filterwarnings("ignore", message=r".*is currently in (preview|beta).*")


# ------------------------------------------------------------------------------------------------ corpus
@cli.group()
def corpus() -> None:
    """Register and list corpora (one Dagster partition each)."""


@corpus.command("add")
@click.argument("name")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "source_format",
    type=click.Choice(["chatgpt", "longmemeval", "locomo", "jsonl"]),
    help="input format (detected when omitted)",
)
@click.option("--question-id", help="LongMemEval: build this question's haystack only")
@click.option("--sample-id", help="LoCoMo: build this sample only")
@click.option(
    "--split/--no-split", default=None, help="one corpus per record (NAME__<id>); default for LongMemEval"
)
@click.option("--replace", is_flag=True, help="re-point an existing corpus at PATH and delete its built data")
@click.pass_context
def corpus_add(ctx, name, path, source_format, question_id, sample_id, split, replace) -> None:
    """Register PATH as corpus NAME and add its partition (the file is read through first, as the build will)."""
    from memory_cli.corpus_cmd import check_sources, delete_corpus_data
    from memory_core.corpora import plan_corpora

    home = _home(ctx)
    sources = plan_corpora(name, path, source_format, question_id or sample_id, split)
    replaced = check_sources(home, sources, replace)
    for s in replaced:
        delete_corpus_data(home, s)
    _runner(home).register(sources)
    for s in sources:
        suffix = f" (record {s.record_id})" if s.record_id else ""
        note = " (replaced; its built data deleted)" if s in replaced else ""
        click.echo(f"registered {s.name}: {s.source_format} {s.path}{suffix}{note}")


@corpus.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def corpus_list(ctx, as_json) -> None:
    """Registered corpora."""
    rows = _home(ctx).registrations()
    if as_json:
        click.echo(json.dumps(rows, default=str, indent=2))
        return
    for r in rows:
        rid = (r["options"] or {}).get("record_id")
        click.echo(f"{r['name']}\t{r['source_format']}\t{r['path']}" + (f"\t{rid}" if rid else ""))


@corpus.command("remove")
@click.argument("name")
@click.option("--delete-data", is_flag=True, help="also delete the corpus's stores, graph and indexes")
@click.pass_context
def corpus_remove(ctx, name, delete_data) -> None:
    """Unregister a corpus (and drop its partition)."""
    from memory_cli.corpus_cmd import delete_corpus_data
    from memory_core.corpora import registered_source

    home = _home(ctx)
    registered_source(home, name)  # a corpus that is not registered is an error, not a silent success
    if delete_data:  # first: a drop that fails leaves the corpus registered, so the command can be run again
        delete_corpus_data(home, name)
    home.unregister(name)
    _runner(home).remove_partition(name)
    click.echo(f"removed {name}")


# ------------------------------------------------------------------------------------------------ build
@cli.command()
@click.argument("name")
@click.option("--select", "selection", help="comma-separated asset keys (default: every stage)")
@click.option("--quiet", is_flag=True, help="no progress lines")
@click.pass_context
def materialize(ctx, name, selection, quiet) -> None:
    """Build corpus NAME in this process against the instance in DAGSTER_HOME."""
    result = _materialize(
        _home(ctx), name, [s.strip() for s in selection.split(",")] if selection else None, quiet
    )
    sys.exit(0 if result else 1)


def _runner(home: MemoryHome):
    """The in-process runner on the instance in DAGSTER_HOME (Dagster is imported here, not at start)."""
    from memory_assets.instance import memory_instance
    from memory_assets.runner import CorpusRunner

    return CorpusRunner(home, memory_instance(home))


def _materialize(home: MemoryHome, name: str, selection: list[str] | None, quiet: bool = False) -> bool:
    return _run_assets(home, name, selection, quiet).passed


def _run_assets(
    home: MemoryHome, name: str, selection: list[str] | None, quiet: bool = False, ops: dict | None = None
):
    """Materialise `selection` of corpus `name` in this process; `ops` is per-asset run config."""
    from memory_core.corpora import registered_source

    registered_source(home, name)  # an unknown name is said before anything starts
    runner = _runner(home)
    keys = runner.selected_keys(selection) if selection else None  # a stage or multi-asset, expanded
    click.echo(f"materialising {name} ({', '.join(keys) if keys else 'every stage'})", err=True)
    # --quiet silences the step lines, never what run health freed or waits on
    run = runner.materialize(name, selection, ops, progress=None if quiet else sys.stderr, notices=sys.stderr)
    failed_checks = run.failed_checks("ERROR") if run.success else []
    user_error = None if run.success else run.user_error()
    if (
        user_error
    ):  # a bad input or an unregistered corpus: the same one line and exit code as at `corpus add`
        raise InputError(user_error)
    if failed_checks:  # a non-blocking ERROR check does not fail the Dagster run; it fails the command
        click.echo(f"failed: ERROR check(s) {', '.join(failed_checks)} (run {run.run_id})", err=True)
    elif run.success:
        click.echo(f"done in {run.seconds:.1f}s (run {run.run_id})", err=True)
    else:
        click.echo(
            f"failed after {run.seconds:.1f}s (run {run.run_id}); see `dagster` run logs or the UI", err=True
        )
    return run


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def stats(ctx, name, as_json) -> None:
    """Row counts per table and dead letters with their reasons."""
    from memory_core.corpora import registered_source
    from memory_core.store.stats import corpus_stats

    home = _home(ctx)
    registered_source(home, name)
    result = corpus_stats(home.corpus(name))
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
        return
    click.echo(
        f"corpus {name}: {result['conversations']} conversations, {result['messages']} messages, {result['dead_letters']} dead letters"
    )
    for store_name, tables in result["tables"].items():
        click.echo(f"  {store_name}: " + ", ".join(f"{t}={n}" for t, n in tables.items() if n))
    for r in result["dead_letter_reasons"]:
        click.echo(f"  dead letters {r['reason_code']}: {r['count']} (e.g. {r['example']})")


# ------------------------------------------------------------------------------------------------ gardener
@cli.group()
def gardener() -> None:
    """The gardener: Phase 0 triage, Phase 1 refactoring (dry run first), audit and rollback."""


@gardener.command("triage")
@click.argument("name")
@click.option("--quiet", is_flag=True, help="no progress lines")
@click.pass_context
def gardener_triage(ctx, name, quiet) -> None:
    """Run Phase 0 triage of corpus NAME now (the nightly schedule does the same)."""
    from memory_core.gardener.triage import MANIFEST_FILE

    home = _home(ctx)
    if not _materialize(home, name, ["gardener_triage"], quiet):
        sys.exit(1)
    body = json.loads(home.corpus(name).path(*MANIFEST_FILE).read_text(encoding="utf-8"))
    click.echo(f"{name}: {body['concepts']} live concepts → proposals {body['counts']}")
    click.echo(f"manifest: {home.corpus(name).path(*MANIFEST_FILE)}")


@gardener.command("apply")
@click.argument("name")
@click.option(
    "--apply/--dry-run",
    "apply",
    default=False,
    help="mutate the store (default: a dry run that plans and reports only, as the job does)",
)
@click.option("--proposal", "proposal_ids", multiple=True, help="only this proposal id (repeatable)")
@click.option(
    "--category",
    "categories",
    multiple=True,
    type=click.Choice(["merge", "split", "macro_concept", "noise"]),
    help="only this category (repeatable)",
)
@click.option("--chooser", type=click.Choice(["rules", "llm"]), default="rules", show_default=True)
@click.option("--max-actions", default=200, show_default=True, help="stop after this many actions")
@click.option("--quiet", is_flag=True, help="no progress lines")
@click.pass_context
def gardener_apply(ctx, name, apply, proposal_ids, categories, chooser, max_actions, quiet) -> None:
    """Phase 1 on corpus NAME's pending proposals (the `gardener_apply` job, run in this process): a dry run
    unless --apply."""
    from memory_core.corpora import registered_source
    from memory_core.gardener import REPORT_DIR

    home = _home(ctx)
    registered_source(home, name)
    dry_run = not apply
    config = {
        "dry_run": dry_run,
        "proposal_ids": list(proposal_ids),
        "categories": list(categories),
        "chooser": chooser,
        "max_actions": max_actions,
    }
    result = _run_assets(home, name, ["gardener_actions"], quiet, {"gardener_actions": {"config": config}})
    if not result.passed:
        sys.exit(1)
    path = home.corpus(name).path(*REPORT_DIR, f"{result.run_id}.json")
    body = json.loads(path.read_text(encoding="utf-8"))
    before, after = body["quality_before"], body["quality_after"]
    click.echo(
        f"{name}: {'DRY RUN, nothing written' if dry_run else 'applied'} — decisions {body['decisions']}, "
        f"actions {body['actions_by_type']}, execution errors {body['execution_errors']}"
    )
    if after:
        for key in ("concepts", "purity", "anchored_rate"):
            click.echo(f"  {key}: {before[key]} → {after[key]}")
    click.echo(f"report: {path.with_suffix('.md')}")
    if not dry_run:
        click.echo(f"undo with: memory-os gardener rollback {name} --run {result.run_id}")


@gardener.command("rollback")
@click.argument("name")
@click.argument("action_ids", nargs=-1)
@click.option("--run", "run_id", help="roll back every applied action of this Phase 1 run (newest first)")
@click.pass_context
def gardener_rollback(ctx, name, action_ids, run_id) -> None:
    """Restore the state before gardener action(s) ACTION_IDS (or a whole run) of corpus NAME exactly."""
    from memory_core.corpora import registered_source
    from memory_core.gardener import content_hash, rollback_action, rollback_run

    if bool(action_ids) == bool(run_id):
        raise click.UsageError("give ACTION_ID(s) or --run RUN_ID")
    home = _home(ctx)
    registered_source(home, name)
    store = home.corpus(name)
    with store.write_lock(timeout_s=30):
        before = content_hash(store)
        done = rollback_run(store, run_id) if run_id else [rollback_action(store, a) for a in action_ids]
        after = content_hash(store)
    for d in done:
        click.echo(f"rolled back {d['gardener_action_id']} ({d['action']}, {len(d['concepts'])} concepts)")
    click.echo(f"concept state hash {before[:16]} → {after[:16]}")


@gardener.command("proposals")
@click.argument("name")
@click.option("--status", default="pending_review", show_default=True, help="'' for every status")
@click.option("--category", type=click.Choice(["merge", "split", "macro_concept", "noise"]))
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def gardener_proposals(ctx, name, status, category, as_json) -> None:
    """Lifecycle proposals of corpus NAME."""
    from sqlalchemy import select

    from memory_core.corpora import registered_source
    from memory_core.store.schema import lifecycle_proposals

    home = _home(ctx)
    registered_source(home, name)
    lp = lifecycle_proposals.c
    query = select(lifecycle_proposals).order_by(lp.category, lp.score.desc())
    if status:
        query = query.where(lp.status == status)
    if category:
        query = query.where(lp.category == category)
    echo_rows(
        staging_rows(home.corpus(name, readonly=True), query),
        as_json,
        lambda r: (
            f"{r['proposal_id']}  {r['category']:<13} {r['score']:.2f} {r['status']:<14} {r['rationale'][:120]}"
        ),
    )


@gardener.command("actions")
@click.argument("name")
@click.option("--run", "run_id", help="only this Phase 1 run")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def gardener_actions_list(ctx, name, run_id, as_json) -> None:
    """The audit trail: gardener actions of corpus NAME with status, rationale and cited messages."""
    from memory_core.corpora import registered_source
    from memory_core.gardener import list_actions

    home = _home(ctx)
    registered_source(home, name)
    echo_rows(
        list_actions(home.corpus(name, readonly=True), run_id=run_id),
        as_json,
        lambda r: (
            f"{r['gardener_action_id']}  {r['action']:<16} {r['status']:<11} "
            f"cites {len(r['cited_message_ids'])} {r['rationale'][:110]}"
        ),
    )


@cli.command("serve-mcp")
@click.option("--corpus", "corpora", multiple=True, help="corpora to serve (default: every registered one)")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="http: bind address (loopback by default)"
)
@click.option("--port", default=8765, show_default=True)
@click.option(
    "--token-env",
    default=settings.MEMORY_OS_MCP_TOKEN.name,
    show_default=True,
    help="http: env var holding a bearer token to require",
)
@click.pass_context
def serve_mcp(ctx, corpora, transport, host, port, token_env) -> None:
    """Serve query_memory and the agent tools over MCP (stdio or streamable HTTP)."""
    from memory_query.mcp_server import MemoryServer, serve

    token = settings.env_value(token_env)
    if transport == "http" and host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise click.UsageError(f"binding {host} beyond loopback needs a bearer token: set {token_env}")
    serve(
        MemoryServer(_home(ctx), corpora or None),
        "streamable-http" if transport == "http" else "stdio",
        host,
        port,
        token,
    )


@cli.command()
@click.option("--port", default=3000, show_default=True)
@click.pass_context
def ui(ctx, port) -> None:
    """Serve the Dagster UI for this project (`dagster dev` on the packaged workspace, this Python's Dagster)."""
    import subprocess

    from memory_assets.instance import ensure_dagster_home, workspace_file

    ensure_dagster_home(_home(ctx))
    with workspace_file() as workspace:
        command = [sys.executable, "-m", "dagster", "dev", "-w", str(workspace), "-p", str(port)]
        sys.exit(subprocess.call(command))


@cli.command()
@click.option("--name", default="demo", show_default=True)
@click.pass_context
def demo(ctx, name) -> None:
    """Register the shipped demo export and build it through every stage."""
    from memory_core.corpora import plan_corpora
    from memory_core.demo import demo_export_path

    home = _home(ctx)
    path = demo_export_path()
    _runner(home).register(plan_corpora(name, path, "chatgpt"))
    click.echo(f"demo corpus {name!r} from {path}", err=True)
    if not _materialize(home, name, None):
        sys.exit(1)
    from memory_core.store.stats import corpus_stats

    s = corpus_stats(home.corpus(name))
    click.echo(
        f"{name}: {s['conversations']} conversations, {s['messages']} messages, {s['dead_letters']} dead letters"
    )
    from memory_core.demo import DEMO_QUESTIONS
    from memory_query import ReaderPool, check_citations, query_memory
    from memory_query.answer import extractive_answer

    pool = ReaderPool(home)
    for question in DEMO_QUESTIONS:
        answer = query_memory(question, name, k=5, pool=pool)
        text = extractive_answer(answer)
        valid = check_citations(text, answer.citations).valid
        click.echo(f"\nQ: {question}\nA: {render_answer(answer, text, 5)}")
        click.echo(f"(citations {'valid' if valid else 'INVALID'})")
        if not valid:
            sys.exit(1)


cli.add_command(eval_group)
cli.add_command(reactions_group)
cli.add_command(facts_command)
cli.add_command(repairs_group)
cli.add_command(ask_command)
cli.add_command(query_command, name="query")
cli.add_command(explore_command)


def main() -> None:  # pragma: no cover - console entry
    cli(obj={})


if __name__ == "__main__":  # pragma: no cover
    main()
