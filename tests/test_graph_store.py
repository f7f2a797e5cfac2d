"""The graph store contract, run against both backends: embedded LadybugDB always, Neo4j when NEO4J_URI
is set (marked `neo4j`, skipped otherwise). Plus the embedded store's atomic swap and the Neo4j store's
parameterisation (checked on the statements it sends, without a server)."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import delete, select

from memory_core.graph import GraphExport, embedded_graph_path, expected_counts, load_corpus_graph
from memory_core.graph.base import EdgeBatch, NodeBatch
from memory_core.graph.ladybug_store import LadybugGraphStore
from memory_core.graph.schema import EDGE_TYPES, NODE_TYPES
from memory_core.store.db import MemoryHome, dispose_engines
from memory_core.store.schema import messages, topic_concept_links
from tests.graph_corpus import T0, build_small_corpus


@pytest.fixture
def corpus(home, tmp_path):
    return build_small_corpus(home, tmp_path)


def _neo4j_store(name: str):
    from memory_core.graph.neo4j_store import Neo4jGraphStore

    return Neo4jGraphStore(
        os.environ["NEO4J_URI"],
        os.environ.get("NEO4J_USER", "neo4j"),
        os.environ.get("NEO4J_PASSWORD", ""),
        corpus=name,
        database=os.environ.get("NEO4J_DATABASE", "neo4j"),
    )


BACKENDS = [
    "embedded",
    pytest.param(
        "neo4j",
        marks=[
            pytest.mark.neo4j,
            pytest.mark.skipif(not os.environ.get("NEO4J_URI"), reason="NEO4J_URI not set"),
        ],
    ),
]


def _open(backend: str, corpus):
    if backend == "embedded":
        return LadybugGraphStore(embedded_graph_path(corpus.store))
    return _neo4j_store(f"test-{uuid.uuid4().hex[:12]}")


def _discard(backend: str, store) -> None:
    if backend == "neo4j":
        for label in NODE_TYPES:
            store.delete_label(label)
    store.close()


@pytest.fixture(params=BACKENDS)
def graph(request, corpus):
    """An empty store of each backend, for tests that write."""
    store = _open(request.param, corpus)
    yield store
    _discard(request.param, store)


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request, tmp_path_factory):
    """(corpus, graph) loaded once per backend for the read-only traversal tests."""
    tmp = tmp_path_factory.mktemp("shared")
    corpus = build_small_corpus(MemoryHome.resolve(tmp / "home"), tmp)
    store = _open(request.param, corpus)
    load_corpus_graph(corpus.store, store)
    yield corpus, store
    _discard(request.param, store)
    dispose_engines()


@pytest.fixture
def loaded(shared):
    return shared[1]


@pytest.fixture
def small(shared):
    return shared[0]


# ------------------------------------------------------------------------------------------ loading
def test_counts_match_the_tables_and_reflective_is_excluded_by_default(graph, corpus):
    report, export = load_corpus_graph(corpus.store, graph)
    counts = graph.counts()
    expected = expected_counts(corpus.store)
    assert counts.nodes == expected["nodes"] and counts.edges == expected["edges"]
    assert counts.nodes["UserReaction"] == 0 and counts.edges["DURING"] == 0
    assert report.nodes == counts.nodes and report.edges == counts.edges
    # the hand-built corpus: 10 messages in 2 conversations, 5 rounds, 4 concepts, 5 evidence spans
    assert counts.nodes["Message"] == 10 and counts.edges["NEXT"] == 8 and counts.edges["EVIDENCE_FOR"] == 5
    assert (
        counts.edges["BELONGS_TO"] == 5 + 1 + 1 + 1
    )  # segments→topic, topic→anchor, anchor→domain, topic→domain
    assert export.dangling == {"SUPPORTS": 1}  # a relation to a concept id that does not exist


def test_graph_report_and_contracts(graph, corpus):
    import json

    from sqlalchemy import update

    from memory_core.graph import checks as contracts
    from memory_core.graph.stage import build_graph

    report = build_graph(corpus.store, graph, where={"backend": "test", "location": "here"})
    meta = report.as_metadata()
    assert json.loads(json.dumps(meta)) == meta  # plain JSON-able values
    assert meta["backend"] == "test" and meta["include_reflective"] is False
    assert meta["nodes_total"] == sum(meta["node_counts"].values()) == graph.counts().total_nodes
    assert meta["dangling_references"] == {"SUPPORTS": 1} and len(meta["counts"]) == len(NODE_TYPES) + len(
        EDGE_TYPES
    )
    assert contracts.graph_counts_match_tables(corpus.store, graph.counts()).passed
    evidence = contracts.evidence_points_to_source_messages(corpus.store, graph)
    assert evidence.passed and evidence.figures["evidence_edges"] == 5

    # the tables move on without a reload: one link fewer, one evidence message edited
    with corpus.store.staging.begin() as conn:
        conn.execute(delete(topic_concept_links).where(topic_concept_links.c.weight < 50))
    _, message_id, _, _, _ = next(iter(graph.iter_edges("EVIDENCE_FOR")))
    with corpus.store.source.begin() as conn:
        conn.execute(update(messages).where(messages.c.message_id == message_id).values(text="rewritten"))
    counts = contracts.graph_counts_match_tables(corpus.store, graph.counts())
    assert not counts.passed and [m["type"] for m in counts.figures["mismatches"]] == ["RELATED_TO"]
    evidence = contracts.evidence_points_to_source_messages(corpus.store, graph)
    assert not evidence.passed and evidence.figures["wrong_spans"] >= 1
    assert evidence.figures["examples"][0]["message_id"] == message_id


def test_reload_is_idempotent_and_replaces_stale_items(graph, corpus):
    load_corpus_graph(corpus.store, graph)
    first = graph.counts()
    first_edges = sorted((s, d, p["mention_id"]) for _, s, _, d, p in graph.iter_edges("EVIDENCE_FOR"))
    load_corpus_graph(corpus.store, graph)
    assert graph.counts() == first
    assert (
        sorted((s, d, p["mention_id"]) for _, s, _, d, p in graph.iter_edges("EVIDENCE_FOR")) == first_edges
    )
    with corpus.store.staging.begin() as conn:
        conn.execute(delete(topic_concept_links).where(topic_concept_links.c.weight < 50))
    load_corpus_graph(corpus.store, graph)
    assert graph.counts().edges["RELATED_TO"] == first.edges["RELATED_TO"] - 1
    assert graph.counts().edges == expected_counts(corpus.store)["edges"]


def test_evidence_edges_point_to_source_messages_with_verbatim_spans(loaded, small):
    edges = list(loaded.iter_edges("EVIDENCE_FOR"))
    assert len(edges) == 5
    with small.store.source.connect() as conn:
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text)).all())
    for src_label, src, dst_label, dst, props in edges:
        assert (src_label, dst_label) == ("Message", "Concept") and dst in small.concepts.values()
        assert texts[src][props["span_start"] : props["span_end"]] == props["text"]


def test_reflective_nodes_load_separately_and_purge(graph, corpus):
    loaded = graph
    load_corpus_graph(corpus.store, loaded)
    export = GraphExport(corpus.store, core=False, reflective=True)
    report = loaded.upsert(export.nodes(), export.edges())
    assert report.nodes == {"UserReaction": 1} and report.edges == {"DURING": 1}
    counts = loaded.counts()
    assert counts.nodes["UserReaction"] == 1 and counts.edges["DURING"] == 1
    during = loaded.neighbours("UserReaction", corpus.reaction_id, ["DURING"], "out")
    assert [n.node.id for n in during] == [corpus.topics["garden"]]
    assert loaded.delete_label("UserReaction") == 1
    counts = loaded.counts()
    assert counts.nodes["UserReaction"] == 0 and counts.edges["DURING"] == 0
    assert counts.nodes["Topic"] == 2


def test_upsert_is_idempotent_and_counts_edges_to_missing_nodes(graph, corpus):
    loaded = graph
    load_corpus_graph(corpus.store, loaded)
    before = loaded.counts()
    node = NodeBatch("Domain", [{"id": "d-new", "label": "Travel", "profile": "trips", "size": 1}])
    edges = [
        EdgeBatch(
            "BELONGS_TO",
            "Topic",
            "Domain",
            [{"src": corpus.topics["travel"], "dst": "d-new", "probability": None}],
        ),
        EdgeBatch("BELONGS_TO", "Topic", "Domain", [{"src": "no-such-topic", "dst": "d-new"}]),
    ]
    first = loaded.upsert([node], edges)
    second = loaded.upsert([node], edges)
    assert first.edges == second.edges == {"BELONGS_TO": 1}
    assert first.dropped_edges == {"BELONGS_TO": 1}
    after = loaded.counts()
    assert after.nodes["Domain"] == before.nodes["Domain"] + 1
    assert after.edges["BELONGS_TO"] == before.edges["BELONGS_TO"] + 1
    assert loaded.node("Domain", "d-new").props == {"label": "Travel", "profile": "trips", "size": 1}


# ------------------------------------------------------------------------------------------ traversal
def test_node_lookup_by_label_and_by_id_alone(loaded, small):
    mid = small.conversations["garden"][2]
    node = loaded.node("Message", mid)
    assert (
        node.props["text"] == small.texts[mid]
        and node.props["position"] == 2
        and node.props["role"] == "user"
    )
    assert node.props["parent_id"] is None or isinstance(node.props["parent_id"], str)
    assert loaded.node("Concept", mid) is None
    assert loaded.find_node(small.concepts["kyoto"]).label == "Concept"
    assert loaded.find_node("x' OR 1=1 //") is None  # values are parameters, never query text
    with pytest.raises(ValueError, match="unknown node label"):
        loaded.node("Message) DETACH DELETE (n", mid)


def test_neighbours_by_type_direction_and_weight(loaded, small):
    garden = small.topics["garden"]
    related = loaded.neighbours("Topic", garden, ["RELATED_TO"], "out", order_by="weight")
    assert [n.edge["weight"] for n in related] == [100.0, 60.0, 35.0]
    assert [n.node.id for n in related] == [small.concepts[k] for k in ("beds", "lettuce", "shade")]
    assert (
        loaded.neighbours("Topic", garden, ["RELATED_TO"], "out", order_by="weight", limit=2)[1].edge[
            "weight"
        ]
        == 60.0
    )
    incoming = loaded.neighbours("Concept", small.concepts["kyoto"], ["EVIDENCE_FOR"], "in")
    assert len(incoming) == 2 and all(n.direction == "in" and n.node.label == "Message" for n in incoming)
    for n in incoming:
        assert n.node.props["text"][n.edge["span_start"] : n.edge["span_end"]] == n.edge["text"]
    both = loaded.neighbours("Concept", small.concepts["shade"], direction="both")
    kinds = {(n.edge_type, n.direction, n.node.label) for n in both}
    assert ("CAUSES", "out", "Concept") in kinds and ("MENTIONS", "in", "Segment") in kinds
    assert ("RELATED_TO", "in", "Topic") in kinds and ("ACTED_ON", "in", "GardenerAction") in kinds
    only_topics = loaded.neighbours(
        "Concept", small.concepts["shade"], direction="both", neighbour_labels=["Topic"]
    )
    assert [n.node.id for n in only_topics] == [garden]
    with pytest.raises(ValueError, match="unknown edge type"):
        loaded.neighbours("Topic", garden, ["RELATED_TO]->() DETACH DELETE (x"])
    with pytest.raises(KeyError):
        loaded.neighbours("Topic", garden, ["RELATED_TO"], order_by="text")


def test_walk_is_bounded_breadth_first(loaded, small):
    beds = small.concepts["beds"]
    one = loaded.walk("Concept", beds, 1)
    two = loaded.walk("Concept", beds, 2)
    assert {d for _, d in one} == {1} and {d for _, d in two} == {1, 2}
    assert {(n.label, n.id) for n, _ in one} < {(n.label, n.id) for n, _ in two}
    assert all((n.label, n.id) != ("Concept", beds) for n, _ in two)
    assert [d for _, d in two] == sorted(d for _, d in two)
    assert len(loaded.walk("Concept", beds, 2, limit=3)) == 3
    assert ("Domain", small.domain_id) in {(n.label, n.id) for n, _ in loaded.walk("Concept", beds, 3)}
    chain = loaded.walk("Message", small.conversations["garden"][0], 6, ["NEXT"], "out")
    assert [n.id for n, _ in chain] == small.conversations["garden"][1:] and [d for _, d in chain] == [
        1,
        2,
        3,
        4,
        5,
    ]
    with pytest.raises(ValueError, match="hops"):
        loaded.walk("Concept", beds, 99)


def test_chronological_walk_from_a_message(loaded, small):
    garden = small.conversations["garden"]
    around = loaded.chronology(garden[2], before=2, after=2)
    assert [n.id for n in around] == garden[0:5]
    assert [n.id for n in loaded.chronology(garden[0], before=3, after=1)] == garden[0:2]
    trip = small.conversations["trip"]
    assert [n.id for n in loaded.chronology(trip[-1], before=1, after=5)] == trip[
        -2:
    ]  # never crosses conversations
    assert loaded.chronology("no-such-message") == []


def test_hierarchy_walk_down_and_up(loaded, small):
    domain_children = loaded.children("Domain", small.domain_id)
    assert {(n.node.label, n.node.id) for n in domain_children} == {
        ("AnchorEntity", small.anchor_id),
        ("Topic", small.topics["travel"]),  # a topic without an anchor hangs from its domain
    }
    assert [n.node.id for n in loaded.children("AnchorEntity", small.anchor_id)] == [small.topics["garden"]]
    concepts = loaded.children("Topic", small.topics["garden"])
    assert [n.node.id for n in concepts][0] == small.concepts["beds"]
    segs = loaded.children("Concept", small.concepts["kyoto"])
    assert segs and all(n.node.label == "Segment" for n in segs)
    msgs = loaded.children("Segment", segs[0].node.id)
    assert [n.node.id for n in msgs] == small.segments[segs[0].node.id]
    assert loaded.children("Message", msgs[0].node.id) == []
    path = loaded.lineage("Message", small.conversations["garden"][2])
    assert [n.label for n in path] == ["Message", "Segment", "Concept", "Topic", "AnchorEntity", "Domain"]
    assert [n.label for n in loaded.lineage("Topic", small.topics["travel"])] == ["Topic", "Domain"]


def test_fact_state_time_travel(loaded, small):
    beds = small.concepts["beds"]
    assert [s.node.props["value"] for s in loaded.fact_states(beds)] == ["lettuce and basil"]
    assert [s.node.props["value"] for s in loaded.fact_states(beds, valid_at=T0 + timedelta(minutes=1))] == [
        "tomatoes"
    ]
    # valid_until is exclusive: at the switch the new state holds
    assert [s.node.props["value"] for s in loaded.fact_states(beds, valid_at=T0 + timedelta(minutes=4))] == [
        "lettuce and basil"
    ]
    assert loaded.fact_states(beds, valid_at=T0 - timedelta(days=1)) == []
    # system time: before memory recorded anything it believed nothing
    assert loaded.fact_states(beds, recorded_as_of=T0) == []
    state = loaded.fact_states(beds, attribute="crop")[0]
    assert state.edge["valid_until"] is None and state.edge["valid_from"] == T0 + timedelta(minutes=4)
    assert loaded.fact_states(beds, attribute="colour") == []


def test_every_label_and_type_is_counted_even_when_empty(graph):
    counts = graph.counts()  # nothing loaded yet
    assert set(counts.nodes) == set(NODE_TYPES) and set(counts.edges) == set(EDGE_TYPES)
    assert counts.total_nodes == 0 and counts.total_edges == 0
    assert graph.node("Message", "anything") is None and graph.walk("Message", "anything", 2) == []


# ------------------------------------------------------------------------------------------ embedded only
def _batches(n_nodes: int):
    nodes = [
        NodeBatch(
            "Domain",
            [{"id": f"d{i}", "label": f"domain {i}", "profile": "", "size": i} for i in range(n_nodes)],
        )
    ]
    edges = [EdgeBatch("BELONGS_TO", "AnchorEntity", "Domain", [])]
    return nodes, edges


def test_embedded_swap_is_atomic_for_readers(tmp_path):
    import ladybug

    path = tmp_path / "graph" / "graph.lbdb"
    writer = LadybugGraphStore(path)
    writer.load(*_batches(3))
    reader = LadybugGraphStore(path)
    assert reader.counts().nodes["Domain"] == 3
    raw = ladybug.Database(str(path), read_only=True)  # a reader that opened the old file and keeps it
    raw_conn = ladybug.Connection(raw)
    writer.load(*_batches(5))
    assert raw_conn.execute("MATCH (d:Domain) RETURN count(d)").get_all() == [[3]]
    assert reader.counts().nodes["Domain"] == 5  # notices the new file and reopens
    raw_conn.close()
    raw.close()

    def broken_nodes():
        yield NodeBatch("Domain", [{"id": "x", "label": "x", "profile": "", "size": 1}])
        raise RuntimeError("export died half way")

    with pytest.raises(RuntimeError, match="half way"):
        writer.load(broken_nodes(), [])
    assert reader.counts().nodes["Domain"] == 5  # the old graph is untouched
    # no temp files left; the marker names the export the file was loaded from
    assert sorted(p.name for p in path.parent.iterdir()) == [".graph.lbdb.export", "graph.lbdb"]
    reader.close()
    writer.close()


def test_an_unchanged_export_leaves_the_embedded_graph_file_as_it_is(tmp_path):
    """A rebuild whose export equals the last load's writes nothing (the file, and the read caches stamped
    by it, stay valid); any other write makes the next load a real one."""
    path = tmp_path / "graph" / "graph.lbdb"
    store = LadybugGraphStore(path)
    first = store.load(*_batches(3))
    stamp = (os.stat(path).st_ino, os.stat(path).st_mtime_ns)
    again = store.load(*_batches(3))
    assert not first.unchanged and again.unchanged
    assert again.nodes == first.nodes and (os.stat(path).st_ino, os.stat(path).st_mtime_ns) == stamp
    assert store.counts().nodes["Domain"] == 3
    os.utime(path, ns=(stamp[1] + 10**9, stamp[1] + 10**9))  # the file touched by a writer keeping no marker
    assert not store.load(*_batches(3)).unchanged

    changed = store.load(*_batches(4))
    assert not changed.unchanged and store.counts().nodes["Domain"] == 4
    store.upsert([NodeBatch("Domain", [{"id": "extra", "label": "x", "profile": "", "size": 1}])])
    assert store.counts().nodes["Domain"] == 5
    reloaded = store.load(*_batches(4))  # the same export as the last load, but the file was changed since
    assert not reloaded.unchanged and store.counts().nodes["Domain"] == 4
    store.close()


def test_embedded_load_keeps_text_exactly(tmp_path):
    text = 'line one\nline "two", with comma\\N and a backslash \\\r\nend ü 😀'
    store = LadybugGraphStore(tmp_path / "g.lbdb")
    store.load(
        [
            NodeBatch(
                "Conversation",
                [
                    {
                        "id": "c",
                        "title": "",
                        "created_at": T0,
                        "source_format": "jsonl",
                        "source_ref": "c",
                        "message_count": 1,
                    }
                ],
            ),
            NodeBatch(
                "Message",
                [
                    {
                        "id": "m",
                        "conversation_id": "c",
                        "role": "user",
                        "author": "",
                        "text": text,
                        "created_at": T0,
                        "position": 0,
                        "source_ref": "m",
                    },
                    {
                        "id": "m2",
                        "conversation_id": "c",
                        "role": "user",
                        "author": "me",
                        "text": "",
                        "created_at": T0,
                        "position": 1,
                        "source_ref": "m2",
                    },
                ],
            ),
        ],
        [
            EdgeBatch(
                "HAS_MESSAGE",
                "Conversation",
                "Message",
                [{"src": "c", "dst": "m", "position": 0}, {"src": "c", "dst": "m", "position": 0}],
            )
        ],
    )
    assert store.node("Message", "m").props["text"] == text
    assert (
        store.node("Message", "m").props["author"] == "" and store.node("Message", "m2").props["text"] == ""
    )
    assert store.node("Conversation", "c").props["title"] == ""
    assert store.counts().edges["HAS_MESSAGE"] == 1  # the repeated edge was kept once
    store.close()


def test_embedded_load_rejects_bad_rows(tmp_path):
    store = LadybugGraphStore(tmp_path / "g.lbdb")
    with pytest.raises(ValueError, match="not in the graph schema"):
        store.load(
            [NodeBatch("Domain", [{"id": "d", "label": "x", "profile": "", "size": 1, "secret": 1}])], []
        )
    with pytest.raises(ValueError, match="does not connect"):
        store.load([], [EdgeBatch("NEXT", "Message", "Concept", [])])
    with pytest.raises(ValueError, match="integer"):
        store.load([NodeBatch("Domain", [{"id": "d", "label": "x", "profile": "", "size": "many"}])], [])
    assert not (tmp_path / "g.lbdb").exists()


# ------------------------------------------------------------------------------------------ neo4j, no server
class _RecordingDriver:
    """Stands in for the Bolt driver: records every statement and its parameters."""

    def __init__(self):
        self.statements: list[tuple[str, dict]] = []

    def session(self, database):
        return _RecordingSession(self)

    def close(self):
        pass


class _Result(list):
    def consume(self):
        return None


class _Record(dict):
    def data(self):
        return dict(self)


class _RecordingSession:
    def __init__(self, driver):
        self.driver = driver

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, query, params=None):
        self.driver.statements.append((query, dict(params or {})))
        if "rows" in (params or {}):
            return _Result([_Record(written=len(params["rows"]))])
        return _Result([_Record(deleted=0, total=0)])

    def execute_write(self, work):
        return work(self)

    execute_read = execute_write


def test_neo4j_statements_are_parameterised(corpus):
    from memory_core.graph.neo4j_store import Neo4jGraphStore

    store = Neo4jGraphStore("bolt://localhost:7687", "neo4j", "secret-pw", corpus="kitchen-7")
    driver = _RecordingDriver()
    store._driver = driver
    report, _ = load_corpus_graph(corpus.store, store)
    assert report.nodes["Message"] == 10 and report.edges["EVIDENCE_FOR"] == 5
    texts = (
        list(corpus.texts.values())
        + list(corpus.texts)
        + list(corpus.concepts.values())
        + ["kitchen-7", "secret-pw"]
    )
    merges = [(q, p) for q, p in driver.statements if "MERGE" in q]
    assert merges and all(q.startswith("UNWIND $rows AS r") for q, _ in merges)
    for query, params in driver.statements:
        assert not any(t in query for t in texts), query  # every value travels as a parameter
        assert params.get("corpus") in (None, "kitchen-7")
    assert any("REQUIRE (n.corpus, n.id) IS UNIQUE" in q for q, _ in driver.statements)
    assert sum("DETACH DELETE" in q for q, _ in driver.statements) == len(
        NODE_TYPES
    )  # stale-node prune per label


def test_many_embedded_graphs_open_in_one_process(corpus):
    """Regression: each open Ladybug database reserved 8 TiB of address space, so a process serving a few
    dozen corpora (an eval run, an MCP server) failed at about the 15th ("Mmap ... failed")."""
    store = corpus.store if hasattr(corpus, "store") else corpus
    with LadybugGraphStore(embedded_graph_path(store)) as writer:
        load_corpus_graph(store, writer)
    opened = [LadybugGraphStore(embedded_graph_path(store)) for _ in range(40)]
    try:
        assert all(g.counts().total_nodes > 0 for g in opened)
    finally:
        for g in opened:
            g.close()


def test_embedded_load_reads_a_quoted_field_that_comes_late_in_its_file(tmp_path):
    """The CSV dialect is given, not detected: a file whose first thousands of rows quote nothing (a 10k
    corpus's EVIDENCE_FOR spans) once had its first quoted text with a comma split into two columns."""
    plain = [{"id": f"m{i}", "text": f"plain text {i}"} for i in range(3000)]
    late = [{"id": "late", "text": 'I really love sailing on weekends, it keeps me "sane"'}]
    rows = [
        {"conversation_id": "c", "role": "user", "author": "u", "created_at": T0, "position": i,
         "source_ref": r["id"], **r}
        for i, r in enumerate(plain + late)
    ]  # fmt: skip
    store = LadybugGraphStore(tmp_path / "g.lbdb")
    store.load([NodeBatch("Message", rows)], [])
    assert store.node("Message", "late").props["text"] == late[0]["text"]
    assert store.counts().nodes["Message"] == 3001
    store.close()


def test_an_edge_type_is_read_in_slices_each_edge_once(corpus, monkeypatch):
    """The embedded store reads an edge type in slices of its source nodes' offsets (the engine holds a
    query's whole result in the reader's buffer pool; at 300k messages EVIDENCE_FOR did not fit): with a
    slice of one edge every edge still comes back once, with its properties."""
    from memory_core.graph import ladybug_store

    graph = _open("embedded", corpus)
    try:
        load_corpus_graph(corpus.store, graph)
        whole = {t: list(graph.iter_edges(t)) for t in ("EVIDENCE_FOR", "NEXT", "CONTAINS_MESSAGE")}
        monkeypatch.setattr(ladybug_store, "_EDGE_SLICE", 1)
        for edge_type, edges in whole.items():
            sliced = list(graph.iter_edges(edge_type))
            assert len(edges) > 1 and sorted(sliced) == sorted(edges), edge_type
            assert len(set(map(repr, sliced))) == len(sliced)  # none twice
    finally:
        graph.close()


def _rows_of(props, n: int, **columns) -> list[dict]:
    """`n` rows with a value for every property (None where it may be; a string names its property and row),
    `columns` computed by index."""
    plain = {"INT64": 1, "DOUBLE": 0.5, "TIMESTAMP": T0, "BOOLEAN": False}

    def row(i: int) -> dict:
        values = {p.name: None if p.nullable else plain.get(p.type, f"{p.name} {i}") for p in props}
        return values | {name: make(i) for name, make in columns.items()}

    return [row(i) for i in range(n)]


def _evidence_graph(n_edges: int, text: str = "I met Ana Silva in Lisbon and we talked about the launch."):
    nodes = [
        NodeBatch("Message", _rows_of(NODE_TYPES["Message"].props, 5000, id=lambda i: f"m{i}", text=lambda i: text)),
        NodeBatch("Concept", _rows_of(NODE_TYPES["Concept"].props, 1000, id=lambda i: f"c{i}")),
    ]  # fmt: skip
    evidence = _rows_of(
        EDGE_TYPES["EVIDENCE_FOR"].props, n_edges,
        src=lambda i: f"m{i % 5000}", dst=lambda i: f"c{i % 1000}", mention_id=lambda i: f"mention-{i:08d}",
        text=lambda i: text,
    )  # fmt: skip
    return nodes, [EdgeBatch("EVIDENCE_FOR", "Message", "Concept", evidence)]


def test_a_load_in_parts_holds_the_graph_a_whole_load_holds(corpus, tmp_path, monkeypatch):
    """Each spooled file is copied in parts of at most `part_bytes`, a part starting on a row with its own
    header (a text with newlines and quotes included); the graph equals a load of whole files, and a file of
    one part hashes as it always did (an unchanged graph is not reloaded after an upgrade)."""
    from memory_core.graph import ladybug_store

    spooled: list[dict] = []
    real_close = ladybug_store._Spool.close
    monkeypatch.setattr(ladybug_store._Spool, "close", lambda s: spooled.append(real_close(s)) or spooled[-1])
    monkeypatch.setattr(ladybug_store, "_PART_CHECK_ROWS", 2)  # the small corpus's files are a batch each
    whole = LadybugGraphStore(tmp_path / "whole.lbdb")
    parted = LadybugGraphStore(tmp_path / "parted.lbdb", part_bytes=200)
    try:
        whole_load, _ = load_corpus_graph(corpus.store, whole)
        parted_load, _ = load_corpus_graph(corpus.store, parted)
        # where the parts were cut does not make the export another one
        assert parted_load.export_digest == whole_load.export_digest
        assert all(len(parts) == 1 for parts in spooled[0].values())
        assert max(len(parts) for parts in spooled[1].values()) > 3
        assert parted.counts() == whole.counts()
        for edge_type in ("EVIDENCE_FOR", "NEXT", "CONTAINS_MESSAGE", "BELONGS_TO"):
            assert sorted(map(repr, parted.iter_edges(edge_type))) == sorted(
                map(repr, whole.iter_edges(edge_type))
            )
        with corpus.store.source.connect() as conn:
            for message_id, text in conn.execute(select(messages.c.message_id, messages.c.text)):
                assert parted.node("Message", message_id).props["text"] == text

        text = 'a "quoted", multi\nline text'
        multiline = LadybugGraphStore(tmp_path / "multiline.lbdb", part_bytes=2000)
        multiline.load(*_evidence_graph(300, text))
        assert len(spooled[-1][("EVIDENCE_FOR", "Message", "Concept")]) > 3
        assert {props["text"] for *_, props in multiline.iter_edges("EVIDENCE_FOR")} == {text}
        assert multiline.counts().edges["EVIDENCE_FOR"] == 300
        multiline.close()
    finally:
        whole.close()
        parted.close()
    files = {("Domain",): [tmp_path / "one.csv"]}
    files[("Domain",)][0].write_text("id\nd1\n")
    spool = ladybug_store._Spool(tmp_path, 1 << 20)
    assert ladybug_store._export_digest(files, spool) == _digest_of_whole_files(
        {("Domain",): files[("Domain",)][0]}
    )


def _digest_of_whole_files(files: dict) -> str:
    """The export digest as it was computed before files had parts (pinned: stored markers hold it)."""
    import hashlib

    from memory_core.graph.ladybug_store import _library_version, schema_ddl

    digest = hashlib.sha256(f"{_library_version()}\n".encode() + "\n".join(schema_ddl()).encode())
    for key in sorted(files):
        options = "(HEADER=true, DELIM=',', QUOTE='\"', ESCAPE='\"', AUTO_DETECT=false)"
        digest.update(f"\x00{key}\x00{options}\x00".encode())
        digest.update(files[key].read_bytes())
    return digest.hexdigest()


def test_the_write_pool_holds_the_data_and_eight_times_the_largest_part(monkeypatch):
    from memory_core.graph import ladybug_store

    gib = 1 << 30
    monkeypatch.setattr(ladybug_store, "_physical_memory", lambda: 24 * gib)
    assert ladybug_store.copy_part_bytes() == 6 * gib // 8
    assert ladybug_store.load_pool([]) == ladybug_store._WRITE_POOL  # the floor
    assert ladybug_store.load_pool([100 << 20, 300 << 20]) == 2400 << 20  # eight times the largest part
    assert ladybug_store.load_pool([500 << 20] * 10) == 5000 << 20  # the data, a checkpoint writes it all
    assert ladybug_store.load_pool([700 << 20] * 20) == 6 * gib  # at most a quarter of the memory


@pytest.mark.slow
def test_a_large_edge_type_loads_in_parts_where_one_copy_overflows_the_pool(tmp_path, monkeypatch):
    """Regression (bench_scale at 1M messages with concepts): the load failed in a COPY with "Unable to
    allocate memory! The buffer pool is full" — one COPY holds several times its file in the pool. Here with
    a 128 MiB pool: a 39 MB EVIDENCE_FOR file copied whole overflows it; copied in the parts the pool is
    sized for (16 MiB), the same graph loads."""
    from memory_core.graph import ladybug_store

    pool = 128 << 20
    monkeypatch.setattr(ladybug_store, "_WRITE_POOL", pool)
    monkeypatch.setattr(ladybug_store, "_physical_memory", lambda: 4 * pool)
    with LadybugGraphStore(tmp_path / "whole.lbdb", part_bytes=1 << 40) as whole:
        with pytest.raises(RuntimeError, match="buffer pool is full"):
            whole.load(*_evidence_graph(220_000))
    with LadybugGraphStore(tmp_path / "parted.lbdb") as parted:
        parted.load(*_evidence_graph(220_000))
        assert parted.counts().edges["EVIDENCE_FOR"] == 220_000
