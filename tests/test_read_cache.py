"""The read cache (memory_query.read_cache): written by the `indexes` and `graph` assets, used by a reader
only while it is as fresh as the stores it was derived from, identical results with and without it, and a
corrupt file a logged cache miss."""

from __future__ import annotations

import logging
import os
from datetime import datetime

import dagster as dg
import numpy as np
import pytest
from sqlalchemy import insert, select, update

from memory_assets.definitions import defs
from memory_assets.partitions import corpus_partitions
from memory_core.graph import embedded_graph_path
from memory_core.store.db import file_stamps
from memory_core.store.schema import messages, segments
from memory_query.adjacency import adjacency_for, graph_loaded, graph_stamp
from memory_query.read_cache import PARTS, SegmentMembers, SortedLookup, part_path, read_cache_dir
from memory_query.reader import CorpusReader
from memory_query.retrieval import rank
from memory_resources.embeddings import EmbeddingsResource
from tests.conftest import stage_resources
from tests.graph_corpus import build_small_corpus

QUESTIONS = (
    "Which vegetables grow on a north balcony?",
    "Where am I staying in Kyoto?",
    "When is the cherry blossom season?",
)


def _ranked(reader: CorpusReader, questions=QUESTIONS) -> list:
    out = []
    for question in questions:
        answer = rank(reader, question, 8)
        out.append(([(e.message_id, e.score) for e in answer.items], answer.context, answer.paths_available))
    return out


@pytest.fixture
def garden(home, instance, tmp_path):
    """The small hand-built corpus with `graph` and `indexes` materialised (hashing vectors)."""
    corpus = build_small_corpus(home, tmp_path, name="garden")
    instance.add_dynamic_partitions(corpus_partitions.name, ["garden"])
    result = dg.materialize(
        list(defs.assets),
        selection=dg.AssetSelection.assets("graph", "indexes"),
        instance=instance,
        partition_key="garden",
        resources=stage_resources(home, embeddings=EmbeddingsResource(provider="hashing", hashing_dim=64)),
    )
    assert result.success
    return corpus, result


def _fresh_parts(store) -> dict[str, bool]:
    reader = CorpusReader(store)
    stamps = {
        "messages": reader.store_stamp("source"),
        "segments": reader.store_stamp("source", "staging"),
        "adjacency": graph_stamp(reader),
        "lexicon": file_stamps(reader.lexicon_files()),
    }
    return {part: reader.cached_part(part, stamps[part]) is not None for part in PARTS}


def test_the_assets_write_it_and_a_reader_uses_it_with_identical_results(garden):
    corpus, result = garden
    store = corpus.store
    index_meta = result.asset_materializations_for_node("indexes")[0].metadata
    graph_meta = result.asset_materializations_for_node("graph")[0].metadata
    assert index_meta["read_cache_parts"].value == ["lexicon", "messages", "segments"]
    rows = index_meta["read_cache_rows"].value
    assert rows["messages"] == 10 and rows["segments"] == len(corpus.segments)
    assert rows["lexicon"] == 10 + 2 + 4  # messages, conversations, concepts
    assert graph_meta["read_cache_parts"].value == ["adjacency"]
    assert _fresh_parts(store) == dict.fromkeys(PARTS, True)

    cached, stores = CorpusReader(store), CorpusReader(store, use_read_cache=False)
    assert isinstance(cached.segment_messages(), SegmentMembers)
    assert isinstance(stores.segment_messages(), dict)
    assert (
        dict(cached.segment_messages())
        == dict(cached.segment_messages().items())
        == stores.segment_messages()
    )
    a, b = cached.messages(), stores.messages()
    assert a.ids == b.ids and a.index == b.index and a.conv_ids == b.conv_ids and a.conv_refs == b.conv_refs
    assert a.author == b.author and a.source_ref == b.source_ref and list(a.role) == list(b.role)
    for name in ("conversation", "position", "created_at", "time_derived"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    (lexicon, built), (from_files, _) = cached.lexicon(), stores.lexicon()
    assert built and "lexicon" in cached._cache
    for name in from_files.FILES:
        mine, theirs = getattr(lexicon, name), getattr(from_files, name)
        assert mine.ids == theirs.ids and mine.vocab == theirs.vocab, name
        assert (mine.weights != theirs.weights).nnz == 0 and mine.weights.shape == theirs.weights.shape
    walks, graph_walks = adjacency_for(cached), adjacency_for(stores)
    assert isinstance(walks.next_of, SortedLookup) and walks.source == graph_walks.source == "graph"
    for name in ("related", "evidence", "next_of", "prev_of"):
        assert dict(getattr(walks, name)) == getattr(graph_walks, name), name
    for concept_id, steps in graph_walks.evidence.items():  # a walk decodes only the steps it takes
        assert walks.evidence.first(concept_id, 1) == steps[:1] == walks.evidence[concept_id][:1]
        assert walks.evidence_messages(concept_id) == graph_walks.evidence_messages(concept_id)
    assert any(len(steps) > 1 for steps in graph_walks.evidence.values())
    assert walks.evidence.first("no-such-concept", 2) == [] == walks.evidence_messages("no-such-concept")
    assert graph_loaded(cached) and "graph" not in cached._cache  # the graph store was never opened
    assert _ranked(cached) == _ranked(stores)
    assert any(items for items, _, _ in _ranked(cached))


def test_a_reader_ignores_a_part_once_its_source_changed(garden):
    corpus, _ = garden
    store = corpus.store
    seg_id, members = next((s, m) for s, m in corpus.segments.items() if len(m) > 1)
    # an in-place change of the staging store (a segment's membership refined): the segment map is stale
    with store.staging.begin() as conn:
        conn.execute(update(segments).where(segments.c.segment_id == seg_id).values(message_ids=members[:1]))
    assert _fresh_parts(store) == {"messages": True, "segments": False, "adjacency": True, "lexicon": True}
    reader = CorpusReader(store)
    table = reader.messages()
    assert reader.segment_messages()[seg_id] == [table.index[members[0]]]
    assert _ranked(reader) == _ranked(CorpusReader(store, use_read_cache=False))

    # a new message: the message table (and the segment map, which points into it) are stale
    with store.source.connect() as conn:
        row = dict(conn.execute(select(messages)).mappings().first())
    row.update(
        message_id="m-late", source_ref="late-1", position=999, text="Late note: the basil needs watering."
    )
    row["created_at"] = datetime(2024, 3, 9, 9, 0)
    with store.source.begin() as conn:
        conn.execute(insert(messages).values(**row))
    assert _fresh_parts(store) == {"messages": False, "segments": False, "adjacency": True, "lexicon": True}
    reader = CorpusReader(store)
    assert "m-late" in reader.messages().index and len(reader.messages()) == 11

    # the graph file rebuilt (here: rewritten in place) without a new part: the walks come from the graph
    graph_file = embedded_graph_path(store)
    os.utime(graph_file, ns=(graph_file.stat().st_atime_ns, graph_file.stat().st_mtime_ns + 1_000_000))
    assert _fresh_parts(store)["adjacency"] is False
    reader = CorpusReader(store)
    assert graph_loaded(reader) and "graph" in reader._cache
    assert _ranked(reader) == _ranked(CorpusReader(store, use_read_cache=False))

    # a rebuilt lexical index (here: its file rewritten with the same bytes): the lexicon part is stale
    lexical = CorpusReader(store).lexicon_files()[0]
    lexical.write_bytes(lexical.read_bytes())
    assert _fresh_parts(store)["lexicon"] is False
    assert _ranked(CorpusReader(store)) == _ranked(CorpusReader(store, use_read_cache=False))


def test_a_corrupt_part_is_a_logged_miss(garden, caplog):
    corpus, _ = garden
    store = corpus.store
    path = part_path(store, "messages")
    expected = _ranked(CorpusReader(store, use_read_cache=False))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated
    with caplog.at_level(logging.WARNING, logger="memory_query.read_cache"):
        assert _ranked(CorpusReader(store)) == expected
    warnings = [r for r in caplog.records if r.name == "memory_query.read_cache"]
    assert len(warnings) == 1 and "messages.npz" in warnings[0].getMessage()
    path.write_bytes(b"not a zip file at all")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memory_query.read_cache"):
        assert CorpusReader(store).cached_part("messages", CorpusReader(store).store_stamp("source")) is None
    assert len([r for r in caplog.records if r.name == "memory_query.read_cache"]) == 1


def test_a_fresh_part_that_does_not_decode_is_a_logged_miss(garden, caplog):
    corpus, _ = garden
    store = corpus.store
    path = part_path(store, "messages")
    expected = _ranked(CorpusReader(store, use_read_cache=False))
    with np.load(path, allow_pickle=False) as z:  # another layout, same format and stamp: an array missing
        kept = {name: z[name] for name in z.files}
    dropped = next(name for name in kept if name != "meta")
    del kept[dropped]
    with path.open("wb") as fp:
        np.savez(fp, **kept)
    assert _fresh_parts(store)["messages"] is True
    with caplog.at_level(logging.WARNING, logger="memory_query.read_cache"):
        assert _ranked(CorpusReader(store)) == expected
    warnings = [r.getMessage() for r in caplog.records if r.name == "memory_query.read_cache"]
    assert len(warnings) == 1 and "does not decode" in warnings[0]


def test_reading_a_corpus_without_a_cache_creates_none(home, tmp_path):
    corpus = build_small_corpus(home, tmp_path, name="plain")
    reader = CorpusReader(home.corpus("plain", readonly=True))
    assert reader.messages().ids and reader.segment_messages()
    adjacency_for(reader)
    assert not read_cache_dir(corpus.store).exists()


def test_identical_results_on_the_built_demo(built_demo):
    home, name = built_demo
    store = home.corpus(name, readonly=True)
    assert all(part_path(store, p).is_file() for p in PARTS)
    questions = (
        "When is my half marathon?",
        "Which database does Kestrel use for analytics?",
        "What did I decide about the trip to Lisbon?",
    )
    cached = CorpusReader(store)
    assert _ranked(cached, questions) == _ranked(CorpusReader(store, use_read_cache=False), questions)
    assert isinstance(cached.segment_messages(), SegmentMembers)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_a_mapped_index_searches_like_a_read_one(tmp_path, kind):
    """The reader maps its vector indexes (FaissIndex.load(mapped=True)): same ids and scores as reading."""
    from memory_core.vector_index import FaissIndex, IndexPolicy

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((600, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    built = FaissIndex(dim=32, policy=IndexPolicy(kind=kind))
    built.build([f"m{i}" for i in range(600)], vectors)
    built.save(tmp_path / "index")
    read, mapped = FaissIndex.load(tmp_path / "index"), FaissIndex.load(tmp_path / "index", mapped=True)
    queries = rng.standard_normal((5, 32)).astype(np.float32)
    a, b = read.search(queries, 10), mapped.search(queries, 10)
    assert a.ids == b.ids and np.array_equal(a.scores, b.scores) and len(a.ids[0]) == 10
    assert np.array_equal(read.vectors([0, 599]), mapped.vectors([0, 599]))
