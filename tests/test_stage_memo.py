"""Stages that read nothing when their input stands (memory_core.store.memo): the graph export, the memory
loop at its fixed point, the lexical indexes, and the purity and grounding figures — each computed again as
soon as a table it reads is written, its code or settings change, or the output it wrote is not there."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import delete, event, insert, select, update

from memory_core.concepts import metrics
from memory_core.graph import export as graph_export
from memory_core.graph import open_graph
from memory_core.graph.export import CORE_TABLES, GraphExport
from memory_core.graph.stage import build_graph
from memory_core.memory_loop import loop
from memory_core.memory_loop.loop import LOOP_TABLES, consolidate
from memory_core.memory_loop.memory import LoopMemory
from memory_core.store.memo import MEMO_DIR, tables_key
from memory_core.store.schema import (
    canonical_concepts,
    concept_evidence,
    messages,
    residuals,
    topic_concept_links,
)
from memory_core.vector_index import stage as index_stage
from memory_core.vector_index.stage import lexical_indexes
from tests.graph_corpus import build_small_corpus
from tests.loop_samples import add_mentions, build_corpus, mention
from tests.test_memory_loop import HASHING, _embedder


def _counted(monkeypatch, owner, name) -> list[int]:
    calls: list[int] = []
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


# ------------------------------------------------------------------------------------------ graph
@pytest.fixture
def garden(home, tmp_path):
    return build_small_corpus(home, tmp_path)


_BOOKKEEPING = {"store_version", "table_versions", "table_fingerprints"}


def _tables_read(store, run) -> set[tuple[str, str]]:
    """(store, table) of every table the SELECTs `run()` issues read (off the SQL, as the counters are)."""
    read: set[tuple[str, str]] = set()
    listeners = []
    for store_name in ("source", "staging"):
        engine = store.engine(store_name)

        def seen(conn, cursor, statement, params, context, executemany, store_name=store_name):
            if statement.lstrip().upper().startswith(("SELECT", "WITH")):
                names = re.findall(r"\b(?:FROM|JOIN)\s+(\"?\w+\"?)", statement)
                read.update((store_name, t.strip('"').lower()) for t in names)

        event.listen(engine, "before_cursor_execute", seen)
        listeners.append((engine, seen))
    try:
        run()
    finally:
        for engine, seen in listeners:
            event.remove(engine, "before_cursor_execute", seen)
    return {(s, t) for s, t in read if t not in _BOOKKEEPING}


def test_the_graph_export_reads_exactly_the_tables_it_is_kept_under(garden):
    """CORE_TABLES is what a core export selects from, no more and no less: a table it reads but does not
    name would leave a kept export standing after that table changed."""

    def export():
        exported = GraphExport(garden.store)
        list(exported.nodes()), list(exported.edges())

    assert _tables_read(garden.store, export) == set(CORE_TABLES)


def test_each_index_family_reads_exactly_the_tables_it_is_kept_under(garden, home):
    from memory_core.vector_index.families import build_family_index, build_message_index_from_segments
    from memory_core.vector_index.stage import FAMILY_TABLES

    embedder = _embedder(home)
    for family in ("segments", "concepts", "topics", "messages"):
        read = _tables_read(garden.store, lambda f=family: build_family_index(garden.store, f, embedder))
        assert read == set(FAMILY_TABLES[family]), family
    derived = _tables_read(garden.store, lambda: build_message_index_from_segments(garden.store, embedder))
    assert derived == {*FAMILY_TABLES["messages"], ("staging", "segments")}


def test_an_unchanged_corpus_is_not_exported_again_and_any_change_is(garden, monkeypatch):
    graph = open_graph(garden.store)
    try:
        first = build_graph(garden.store, graph)
        exports = _counted(monkeypatch, graph_export.GraphExport, "nodes")
        again = build_graph(garden.store, graph)
        assert not exports and again.load.unchanged and again.counts == first.counts
        assert (
            again.as_metadata()["dangling_references"]
            == first.as_metadata()["dangling_references"]
            == {"SUPPORTS": 1}
        )
        # a link less: the export runs and the graph holds one RELATED_TO edge fewer
        with garden.store.staging.begin() as conn:
            link = conn.execute(select(topic_concept_links).limit(1)).first()
            conn.execute(
                topic_concept_links.delete().where(
                    topic_concept_links.c.topic_id == link.topic_id,
                    topic_concept_links.c.concept_id == link.concept_id,
                )
            )
        changed = build_graph(garden.store, graph)
        assert len(exports) == 1 and not changed.load.unchanged
        assert changed.counts.edges["RELATED_TO"] == first.counts.edges["RELATED_TO"] - 1
        assert build_graph(garden.store, graph).load.unchanged and len(exports) == 1  # kept again
        # the store cannot say which export its file holds (its marker is gone): exported and loaded again
        graph.close()
        (graph.path.parent / f".{graph.path.name}.export").unlink()
        reloaded = build_graph(garden.store, graph)
        assert not reloaded.load.unchanged and len(exports) == 2 and reloaded.counts == changed.counts
        assert build_graph(garden.store, graph).load.unchanged and len(exports) == 2
        # reflective exports depend on the clock (reactions expire): always exported
        build_graph(garden.store, graph, reflective=True)
        build_graph(garden.store, graph, reflective=True)
        assert len(exports) == 4
    finally:
        graph.close()


# ------------------------------------------------------------------------------------------ memory loop
def test_a_loop_run_at_its_fixed_point_loads_nothing_and_new_mentions_are_routed(home, tmp_path, monkeypatch):
    store = home.corpus("planner")
    build_corpus(store, tmp_path)
    embedder = _embedder(home)
    first = consolidate(store, embedder, HASHING)
    assert first.processed > 0 and not first.unchanged_input
    loads = _counted(monkeypatch, LoopMemory, "load")
    again = consolidate(store, embedder, HASHING)
    assert not loads and again.unchanged_input and again.processed == 0
    assert again.concepts_before == again.concepts_after == first.concepts_after
    # other stages' residuals (topics and domains rewrite theirs after the loop) are not its input ...
    now = datetime.now(UTC).replace(tzinfo=None)
    topic_note = dict(stage="topics", reason_code="noise", reason="a noise segment", payload={}, recorded_at=now)
    with store.staging.begin() as conn:
        conn.execute(insert(residuals), [topic_note])
    assert consolidate(store, embedder, HASHING).unchanged_input and not loads
    # ... its own are: a mention whose loop residual went is pending again, and routed
    with store.staging.begin() as conn:
        dropped = conn.execute(
            select(residuals.c.mention_id).where(residuals.c.stage == loop.STAGE).limit(1)
        ).scalar_one()
        conn.execute(delete(residuals).where(residuals.c.mention_id == dropped, residuals.c.stage == loop.STAGE))
    regained = consolidate(store, embedder, HASHING)
    assert len(loads) == 1 and regained.processed >= 1
    loads.clear()
    # the fixed point is real: without the kept key a run reads everything and writes nothing
    (store.dir / MEMO_DIR / f"{loop._MEMO}.json").unlink()
    before = tables_key(store, LOOP_TABLES, "")
    rerun = consolidate(store, embedder, HASHING)
    assert len(loads) == 1 and rerun.processed == 0 and not rerun.unchanged_input
    assert tables_key(store, LOOP_TABLES, "") == before
    # other settings are another computation; a new mention is work
    consolidate(store, embedder, type(HASHING)(rules=HASHING.rules, batch_size=8))
    assert len(loads) == 2
    with store.source.connect() as conn:
        ref = conn.execute(select(messages.c.source_ref).order_by(messages.c.created_at)).scalars().first()
    add_mentions(store, [mention(ref, "this week", "Planner week", "event", "The planner was begun.", 0.8)])
    routed = consolidate(store, embedder, HASHING)
    assert len(loads) == 3 and routed.processed >= 1  # (with the reflective residuals it re-judges)


# ------------------------------------------------------------------------------------------ lexicon, figures
def test_lexical_indexes_are_tokenised_again_only_when_their_tables_or_files_change(garden, monkeypatch):
    built = _counted(monkeypatch, index_stage, "build_corpus_lexicon")
    first = lexical_indexes(garden.store)
    assert lexical_indexes(garden.store) == first and len(built) == 1
    with garden.store.staging.begin() as conn:
        conn.execute(update(canonical_concepts).values(title=canonical_concepts.c.title + " garden"))
    assert lexical_indexes(garden.store) == first and len(built) == 2
    (index_stage.lexicon_dir(garden.store) / "concepts.npz").unlink()
    assert lexical_indexes(garden.store) == first and len(built) == 3
    assert (index_stage.lexicon_dir(garden.store) / "concepts.npz").exists()


def test_grounding_is_kept_while_its_tables_stand_and_sees_an_edited_message(garden, monkeypatch):
    computed = _counted(monkeypatch, metrics, "_grounding")
    assert metrics.grounding(garden.store)["ungrounded_concepts"] == 0
    assert metrics.grounding(garden.store)["ungrounded_concepts"] == 0 and len(computed) == 1
    with garden.store.staging.connect() as conn:
        message_id = conn.execute(select(concept_evidence.c.message_id).limit(1)).scalar_one()
    with garden.store.source.begin() as conn:
        conn.execute(update(messages).where(messages.c.message_id == message_id).values(text="rewritten"))
    assert metrics.grounding(garden.store)["ungrounded_concepts"] >= 1 and len(computed) == 2
    assert metrics.grounding(garden.store)["ungrounded_concepts"] >= 1 and len(computed) == 3  # not kept


def test_a_reader_keeps_no_result(garden, home):
    reader = home.corpus(garden.store.name, readonly=True)
    metrics.grounding(reader)
    assert not (garden.store.dir / MEMO_DIR / "grounding.json").exists()


def test_a_mention_written_while_the_loop_ran_is_not_taken_for_a_fixed_point(home, tmp_path, monkeypatch):
    """The kept key is the tables at the run's end: a mention that arrived after the run read its pending
    list (a writer beside the lock) would be in it unrouted, so the run keeps nothing and the next routes it."""
    store = home.corpus("planner")
    build_corpus(store, tmp_path)
    with store.source.connect() as conn:
        ref = conn.execute(select(messages.c.source_ref).order_by(messages.c.created_at)).scalars().first()
    real = loop.write_lagging

    def late_mention(mem):
        real(mem)
        add_mentions(
            store, [mention(ref, "this week", "Planner week", "event", "The planner was begun.", 0.8)]
        )

    monkeypatch.setattr(loop, "write_lagging", late_mention)
    consolidate(store, _embedder(home), HASHING)
    monkeypatch.setattr(loop, "write_lagging", real)
    nxt = consolidate(store, _embedder(home), HASHING)
    assert not nxt.unchanged_input and nxt.processed >= 1
    assert consolidate(store, _embedder(home), HASHING).unchanged_input  # at rest now


def test_a_family_index_is_built_again_only_when_its_table_its_files_or_its_segments_index_change(
    garden, home, monkeypatch
):
    from memory_core.vector_index.families import family_path
    from memory_core.vector_index.stage import build_indexes

    built: list[str] = []
    for name in ("build_family_index", "build_message_index_from_segments"):
        real = getattr(index_stage, name)

        def counted(store, *args, real=real, **kwargs):
            report = real(store, *args, **kwargs)
            built.append(report.family)
            return report

        monkeypatch.setattr(index_stage, name, counted)
    embedder = _embedder(home)
    first = build_indexes(garden.store, embedder)
    assert sorted(built) == sorted(r.family for r in first.families) and len(built) == 4
    again = build_indexes(garden.store, embedder)
    assert len(built) == 4 and [r.size for r in again.families] == [r.size for r in first.families]
    assert all(r.embedded == 0 and r.reused == r.size for r in again.families)
    # a concept renamed: its family alone
    with garden.store.staging.begin() as conn:
        conn.execute(update(canonical_concepts).values(title=canonical_concepts.c.title + " garden"))
    build_indexes(garden.store, embedder)
    assert built[4:] == ["concepts"]
    # the segments index gone: built again, and the messages derived from it too
    family_path(garden.store, "segments").unlink()
    build_indexes(garden.store, embedder)
    assert sorted(built[5:]) == ["messages", "segments"]
    # another way of getting message vectors is another build
    build_indexes(garden.store, embedder, message_vectors="segments")
    assert built[7:] == ["messages"]
    # the same vectors from an embedder a reader would rebuild otherwise (the spec each index stores)
    import dataclasses

    spec = embedder.spec()
    monkeypatch.setattr(embedder, "spec", lambda: dataclasses.replace(spec, api_key_env="OTHER_KEY"))
    build_indexes(garden.store, embedder, message_vectors="segments")
    assert sorted(built[8:]) == sorted(["messages", "segments", "concepts", "topics"])


def test_the_span_and_graph_evidence_contracts_keep_a_pass_while_their_input_stands(garden):
    from memory_core.extraction.checks import mention_spans_verbatim
    from memory_core.graph.checks import evidence_points_to_source_messages
    from memory_core.store.schema import mentions

    graph = open_graph(garden.store)
    try:
        build_graph(garden.store, graph)
        for check in (
            lambda: mention_spans_verbatim(garden.store),
            lambda: evidence_points_to_source_messages(garden.store, graph),
        ):
            first, again = check(), check()
            assert first.passed and first.figures["checked_now"]
            assert again.passed and not again.figures["checked_now"]
            assert {k: v for k, v in again.figures.items() if k != "checked_now"} == {
                k: v for k, v in first.figures.items() if k != "checked_now"
            }
        _, message_id, _, _, _ = next(iter(graph.iter_edges("EVIDENCE_FOR")))  # evidence read off a mention
        with garden.store.staging.connect() as conn:
            assert conn.execute(
                select(mentions.c.mention_id).where(mentions.c.message_id == message_id)
            ).first()
        with garden.store.source.begin() as conn:
            conn.execute(update(messages).where(messages.c.message_id == message_id).values(text="rewritten"))
        for check in (
            lambda: mention_spans_verbatim(garden.store),
            lambda: evidence_points_to_source_messages(garden.store, graph),
        ):
            failed, again = check(), check()
            assert not failed.passed and failed.figures["checked_now"]
            assert not again.passed and again.figures["checked_now"]  # a failure is judged afresh
    finally:
        graph.close()
