"""The stores on a live Postgres server (`postgres` marker; `.ci/run` starts one, elsewhere these skip):
stores through MEMORY_OS_DATABASE_URL, the append-only action log, a full build and query, two corpora
built at once, and a long-lived reader that sees an in-place change through the version stamp."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import func, insert, select, text, update

from memory_core.store.schema import action_log, canonical_concepts, messages

pytestmark = pytest.mark.postgres


def _log_row(run_id: str = "r1") -> dict:
    return dict(
        action="create",
        actor="memory_loop",
        concept_id="c1",
        mention_id="m1",
        scores={},
        rationale="new",
        cited_message_ids=["m1"],
        prior_state=None,
        new_state={"title": "x"},
        run_id=run_id,
        recorded_at=datetime.now(UTC).replace(tzinfo=None),
    )


def _databases(home, prefix_of: str) -> set[str]:
    server = home.corpus(prefix_of).url("source").rsplit("/", 1)[0] + "/postgres"
    from sqlalchemy import create_engine

    engine = create_engine(server)
    with engine.connect() as conn:
        names = set(conn.execute(text("SELECT datname FROM pg_database")).scalars())
    engine.dispose()
    return names


def test_the_storage_resource_puts_the_stores_on_postgres_through_the_database_url(pg_home):
    from memory_resources.storage import MemoryStorage

    store = MemoryStorage().corpus("notes")  # no field set: MEMORY_OS_DATABASE_URL, read now
    assert store.home.url_template == pg_home.url_template
    assert store.source.dialect.name == "postgresql" and store.staging.dialect.name == "postgresql"
    with store.source.begin() as conn:
        assert conn.execute(select(func.count()).select_from(messages)).scalar_one() == 0
    names = _databases(pg_home, "notes")
    source_db = store.url("source").rsplit("/", 1)[1]
    assert source_db in names and store.url("staging").rsplit("/", 1)[1] in names
    # a read path creates nothing: a corpus never written reads empty and leaves no database behind
    unseen = pg_home.corpus("never-written", readonly=True)
    with unseen.staging.connect() as conn:
        assert conn.execute(select(func.count()).select_from(canonical_concepts)).scalar_one() == 0
    assert unseen.url("staging").rsplit("/", 1)[1] not in _databases(pg_home, "notes")


def test_the_action_log_is_append_only_on_postgres(pg_home):
    store = pg_home.corpus("notes")
    with store.staging.begin() as conn:
        conn.execute(insert(action_log), [_log_row(), _log_row("r2")])
    for statement in (
        update(action_log).values(rationale="rewritten"),
        action_log.delete().where(action_log.c.run_id == "r1"),
        text("TRUNCATE action_log"),
    ):
        with pytest.raises(Exception, match="append-only"), store.staging.begin() as conn:
            conn.execute(statement)
    with store.staging.begin() as conn:
        conn.execute(insert(action_log), [_log_row("r3")])  # corrections are new rows
        assert conn.execute(select(action_log.c.rationale, action_log.c.run_id)).all() == [
            ("new", "r1"),
            ("new", "r2"),
            ("new", "r3"),
        ]


def _build(home, names: list[str], instance) -> dict:
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.demo import demo_export_path
    from memory_resources.embeddings import EmbeddingsResource

    runner = CorpusRunner(home, instance, resources={"embeddings": EmbeddingsResource(provider="hashing")})
    for name in names:
        runner.register(plan_corpora(name, demo_export_path()))
    return {name: runner.materialize(name) for name in names}


def _counts(store) -> tuple[int, int, int]:
    with store.source.connect() as s, store.staging.connect() as g:
        return (
            s.execute(select(func.count()).select_from(messages)).scalar_one(),
            g.execute(select(func.count()).select_from(canonical_concepts)).scalar_one(),
            g.execute(select(func.count()).select_from(action_log)).scalar_one(),
        )


def test_the_demo_builds_and_answers_on_postgres(pg_home, instance):
    from memory_query import query_memory

    run = _build(pg_home, ["demo"], instance)["demo"]
    assert run.success and run.passed, run.failed_checks()
    store = pg_home.corpus("demo")
    n_messages, n_concepts, n_actions = _counts(store)
    assert n_messages >= 30 and n_concepts > 10 and n_actions >= n_concepts
    answer = query_memory("Which database does Kestrel use for analytics?", "demo", k=5, home=pg_home)
    assert answer.items and any("DuckDB" in item.text for item in answer.items)
    with store.source.connect() as conn:  # every item cites a stored message
        cited = {i.message_id for i in answer.items}
        found = set(
            conn.execute(select(messages.c.message_id).where(messages.c.message_id.in_(cited))).scalars()
        )
    assert found == cited


def test_two_corpora_build_at_once_on_postgres_each_in_its_own_databases(pg_home):
    """Two partition runs at once, each in its own process (memory_assets.parallel), on the persistent
    instance: both succeed, each corpus in its own databases."""
    from memory_assets.instance import memory_instance
    from memory_assets.parallel import materialize_in_parallel
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.demo import demo_export_path

    runner = CorpusRunner(pg_home, memory_instance(pg_home))
    for name in ("alpha", "beta"):
        runner.register(plan_corpora(name, demo_export_path()))
    runs = materialize_in_parallel(
        pg_home, ["alpha", "beta"], workers=2, resource_config={"embeddings": {"provider": "hashing"}}
    )
    assert [r.corpus for r in runs] == ["alpha", "beta"]
    assert all(r.success and r.passed for r in runs), runs
    alpha, beta = _counts(pg_home.corpus("alpha")), _counts(pg_home.corpus("beta"))
    assert alpha[0] == beta[0] >= 30 and alpha[1] > 10 and beta[1] > 10  # the same export, built apart
    assert pg_home.corpus("alpha").url("staging") != pg_home.corpus("beta").url("staging")
    with pytest.raises(Exception, match="appears twice"):
        materialize_in_parallel(pg_home, ["alpha", "alpha"])


def test_a_long_lived_reader_sees_an_in_place_change_on_postgres(pg_home, instance):
    """A refine rewrites a concept row in place: the row count stays, the version stamp moves, the reader
    reloads (what a long-lived MCP server relies on)."""
    from memory_query.reader import CorpusReader

    assert _build(pg_home, ["demo"], instance)["demo"].success
    store = pg_home.corpus("demo")
    reader = CorpusReader(store.read_only())
    before = reader.concepts()
    assert reader.concepts() is before  # nothing written: the cached table is served
    concept_id = before.ids[0]
    stamp = store.version("staging")
    with store.staging.begin() as conn:
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == concept_id)
            .values(title="Kestrel analytics run on DuckDB (refined)")
        )
    assert store.version("staging")[1] == stamp[1] + 1 and store.version("staging")[0] == stamp[0]
    after = reader.concepts()
    assert after is not before and len(after.ids) == len(before.ids)
    assert after.rows[after.index[concept_id]]["title"] == "Kestrel analytics run on DuckDB (refined)"
    with store.staging.connect() as conn:  # a read is no write: the stamp stays
        conn.execute(select(func.count()).select_from(canonical_concepts)).scalar_one()
    assert store.version("staging")[1] == stamp[1] + 1

    # the table's own counter moved too, so its data version is hashed again, and kept after that
    from memory_core.store.fingerprint import fingerprint
    from memory_core.store.version import table_version

    with store.staging.connect() as conn:
        counter = table_version(conn, "canonical_concepts")
    first = fingerprint(store, [("staging", "canonical_concepts")])
    with store.staging.begin() as conn:
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == concept_id)
            .values(title="Kestrel analytics run on DuckDB (refined twice)")
        )
    with store.staging.connect() as conn:
        assert table_version(conn, "canonical_concepts") != counter
    second = fingerprint(store, [("staging", "canonical_concepts")])
    assert second.digest != first.digest and second == fingerprint(store, [("staging", "canonical_concepts")])


def test_removing_a_corpus_with_its_data_drops_its_databases(pg_home, tmp_path):
    from click.testing import CliRunner

    from memory_cli.main import cli
    from tests.revision_samples import MOVES, write_chat

    path = write_chat(tmp_path / "moves.jsonl", MOVES)
    runner = CliRunner()
    assert (
        runner.invoke(cli, ["--home", str(pg_home.root), "corpus", "add", "gone", str(path)]).exit_code == 0
    )
    store = pg_home.corpus("gone")
    with store.source.begin() as conn, store.staging.begin():  # the first writes create the databases
        conn.execute(select(func.count()).select_from(messages))
    names = {store.url(s).rsplit("/", 1)[1] for s in ("source", "staging")}
    assert names <= _databases(pg_home, "gone")
    result = runner.invoke(cli, ["--home", str(pg_home.root), "corpus", "remove", "gone", "--delete-data"])
    assert result.exit_code == 0, result.output
    assert not names & _databases(pg_home, "gone")


def test_a_database_that_cannot_be_dropped_says_why_at_once(postgres_url):
    import time

    from sqlalchemy import create_engine, make_url

    from memory_core.store.db import drop_database

    admin = create_engine(make_url(postgres_url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            started = time.monotonic()
            why = drop_database(conn, "template1")  # a template database: refused for every role
    finally:
        admin.dispose()
    assert why and why.startswith("template1: ") and "in use" not in why
    assert time.monotonic() - started < 5  # not retried: only "in use" is worth waiting for


def test_the_memory_loop_appends_evidence_to_concept_rows_on_postgres(pg_home, tmp_path):
    """`update_concepts` appends a row's new evidence spans in SQL (text splice cast back to JSON) on
    Postgres too: the stored lists are the concepts' whole evidence, text for text."""
    import json

    from memory_core.concepts.store import read_concepts
    from memory_core.embeddings import HashingEmbedder
    from memory_core.memory_loop.loop import LoopConfig, consolidate
    from memory_core.memory_loop.router import RouterRules
    from memory_core.store.schema import concept_evidence
    from tests.loop_samples import build_corpus

    store = pg_home.corpus("dana")
    build_corpus(store, tmp_path)
    rules = RouterRules(alias_attach_similarity=0.3, fact_alias_similarity=0.3)
    report = consolidate(store, HashingEmbedder(), LoopConfig(rules=rules, batch_size=4))
    assert report.actions["attach"] > 0
    with store.staging.connect() as conn:
        concepts = read_concepts(conn)
        raw = dict(
            conn.execute(text("SELECT concept_id, evidence_spans::text FROM canonical_concepts")).all()
        )
        held = conn.execute(select(func.count()).select_from(concept_evidence)).scalar_one()
    assert sum(len(c.evidence_spans) for c in concepts.values()) == held
    for cid, c in concepts.items():
        assert raw[cid] == json.dumps([s.model_dump() for s in c.evidence_spans])


@pytest.mark.parametrize("writer", ["supersede", "gardener"])
def test_rows_a_dead_run_left_behind_are_rebuilt_on_postgres(writer, pg_home, tmp_path, monkeypatch):
    """The lagging-row repair is plain SQL: on Postgres too a run dies with Max's row behind its log, another
    writer rebuilds it before it reads it, the next run catches up, and the tables equal those of a twin
    built on SQLite that never died (tests/test_concept_rows_behind.py, the same scenario)."""
    import tests.test_concept_rows_behind as behind

    behind.test_a_writer_between_a_dead_run_and_the_next_does_not_make_the_lag_permanent(
        writer, pg_home, tmp_path, monkeypatch
    )
    assert pg_home.corpus("dogs").staging.dialect.name == "postgresql"


def _open_corpus(root: str, template: str, barrier, results) -> None:
    barrier.wait(timeout=120)  # every process at the starting line, then all open the store together
    try:
        from sqlalchemy import inspect

        from memory_core.store.db import MemoryHome

        engine = MemoryHome.resolve(root, template).corpus("dana").staging
        results.put(sorted(i["name"] for i in inspect(engine).get_indexes("residuals")))
    except Exception as exc:  # the parent's assertion shows it
        results.put(f"{type(exc).__name__}: {exc}")


def _open_together(pg_home, processes: int = 3) -> list:
    from tests.released_together import released_together

    return released_together(_open_corpus, (str(pg_home.root), pg_home.url_template), processes)


def test_processes_opening_a_store_together_on_postgres_all_open_it(pg_home):
    """Three processes released at once create a fresh store's tables, and later bring an older store's
    missing index up to date, together: the losers of each race (Postgres reports some as a duplicate key in
    its catalogue) look again instead of failing (review s14)."""
    from memory_core.store.db import dispose_engines

    indexes = ["ix_residuals_mention", "ix_residuals_stage", "ix_residuals_stage_mention"]
    assert _open_together(pg_home) == [indexes] * 3  # a fresh store: tables and indexes created at once
    with pg_home.corpus("dana").staging.begin() as conn:
        conn.execute(text("DROP INDEX ix_residuals_stage_mention"))
    dispose_engines()
    assert _open_together(pg_home) == [indexes] * 3  # an older store: the index it lacks, created at once
