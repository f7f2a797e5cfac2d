"""FAISS indexes: exact and approximate search, the size threshold, atomic save/load, and the corpus's
four index families built from their tables (with the hashing embedder)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sqlalchemy import select, update

from memory_core.embeddings import HashingEmbedder
from memory_core.store.schema import canonical_concepts, messages, topics
from memory_core.vector_index import (
    FAMILIES,
    FaissIndex,
    IndexPolicy,
    build_family_index,
    family_path,
    open_family_index,
    source_ids,
)
from memory_core.vector_index.stage import build_indexes
from tests.graph_corpus import build_small_corpus


def _clustered(n: int, dim: int = 32, clusters: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    x = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _ids(n: int) -> list[str]:
    return [f"id-{i}" for i in range(n)]


def test_flat_search_is_exact():
    vectors = _clustered(400)
    index = FaissIndex(dim=32)
    index.build(_ids(400), vectors)
    assert index.kind == "flat" and index.size == 400
    result = index.search(vectors[[7, 123]], 5)
    assert [row[0] for row in result.ids] == ["id-7", "id-123"]
    assert result.scores[0][0] == pytest.approx(1.0, abs=1e-5)
    assert result.scores[0] == sorted(result.scores[0], reverse=True)
    brute = vectors @ vectors[7]
    assert result.ids[0] == [f"id-{i}" for i in np.argsort(-brute)[:5]]
    assert index.search(vectors[3], 1000).ids[0][0] == "id-3"  # k larger than the index
    assert len(index.search(vectors[3], 1000).ids[0]) == 400


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_threshold_switches_to_an_approximate_index_with_high_recall(kind):
    policy = IndexPolicy(approximate_threshold=1000, approximate_kind=kind)
    below, at = FaissIndex(dim=32, policy=policy), FaissIndex(dim=32, policy=policy)
    below.build(_ids(999), _clustered(999))
    vectors = _clustered(1500, seed=1)
    at.build(_ids(1500), vectors)
    assert below.kind == "flat" and at.kind == kind
    if kind == "ivf":
        assert at.params["nlist"] == IndexPolicy.nlist_for(1500) == 38 and at.params["nprobe"] == 16
    exact = FaissIndex(dim=32, policy=IndexPolicy(kind="flat"))
    exact.build(_ids(1500), vectors)
    queries = _clustered(50, seed=2)
    truth, found = exact.search(queries, 10).ids, at.search(queries, 10).ids
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, found, strict=True)])
    assert recall >= 0.9
    # stored vectors come back by id, for reuse in a rebuild and for comparing a few items with a query
    positions = at.positions(["id-1499", "id-0", "not-held"])
    assert positions == [1499, 0, None]
    assert np.allclose(at.vectors(positions[:2]), vectors[[1499, 0]], atol=1e-6)
    assert np.allclose(at.vectors([7]), vectors[[7]], atol=1e-6)
    if kind == "ivf":  # made once, on the first read
        import faiss

        assert faiss.extract_index_ivf(at._index).direct_map.type != faiss.DirectMap.NoMap


def test_threads_reading_stored_vectors_of_one_loaded_ivf_index_get_them_right(tmp_path):
    """A reader's index serves several threads (the MCP server, a ReaderPool). FAISS marks an IVF's direct map
    made before it fills it: without the lock, threads after the first read a half-made map (24 errors in 80
    reads at 200k vectors, 8 threads at once, in review)."""
    import threading

    n = 60_000
    vectors = _clustered(n, dim=16, clusters=64, seed=3)
    built = FaissIndex(dim=16, policy=IndexPolicy(kind="ivf"))
    built.build(_ids(n), vectors)
    built.save(tmp_path / "ivf")
    rng = np.random.default_rng(4)
    failures: list[str] = []
    for _ in range(5):
        index = FaissIndex.load(tmp_path / "ivf", mapped=True)
        start = threading.Barrier(8)

        def read(positions: list[int], index=index, start=start) -> None:
            start.wait()
            try:
                if not np.allclose(index.vectors(positions), vectors[positions], atol=1e-6):
                    failures.append("wrong vectors")
            except RuntimeError as error:
                failures.append(str(error)[:120])

        threads = [threading.Thread(target=read, args=(rng.integers(0, n, 20).tolist(),)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def test_tiny_sets_never_get_an_untrainable_ivf():
    index = FaissIndex(dim=32, policy=IndexPolicy(kind="ivf"))
    index.build(_ids(20), _clustered(20))
    assert index.kind == "flat"


def test_save_load_roundtrip_and_atomic_swap(tmp_path):
    path = tmp_path / "indexes" / "segments"
    path.parent.mkdir()
    v1 = FaissIndex(dim=32, meta={"family": "segments", "model": "m"})
    v1.build(_ids(50), _clustered(50), keys=[f"k{i}" for i in range(50)])
    v1.save(path)
    assert path.is_symlink()
    loaded = FaissIndex.load(path)
    assert loaded.ids == v1.ids and loaded.kind == "flat" and loaded.meta["model"] == "m"
    assert loaded.meta["keys"][49] == "k49"
    query = _clustered(3, seed=5)
    assert loaded.search(query, 4) == v1.search(query, 4)

    before_swap = os.path.realpath(path)  # a reader that resolved the link just before a rebuild
    v2 = FaissIndex(dim=32, policy=IndexPolicy(kind="hnsw"))
    v2.build(_ids(80), _clustered(80, seed=9))
    v2.save(path)
    assert len(FaissIndex.load(before_swap).ids) == 50  # still reads the whole old build
    assert FaissIndex.load(path).size == 80 and FaissIndex.load(path).kind == "hnsw"
    v3 = FaissIndex(dim=32)
    v3.build(_ids(10), _clustered(10))
    v3.save(path)
    builds = sorted(p.name for p in (tmp_path / "indexes" / ".builds").iterdir())
    assert len(builds) == 2 and not os.path.exists(before_swap)  # current + previous kept, older removed
    assert [p.name for p in (tmp_path / "indexes").iterdir() if p.name.startswith(".segments")] == []

    (tmp_path / "indexes" / "plain").mkdir()
    with pytest.raises(FileExistsError):
        v3.save(tmp_path / "indexes" / "plain")
    with pytest.raises(FileNotFoundError):
        FaissIndex.load(tmp_path / "indexes" / "missing")


def test_a_mapped_index_is_read_ahead_in_the_background(tmp_path, monkeypatch):
    """A searching reader maps the index file and reads it once in a daemon thread (so the searches find
    its pages in memory); a file over a quarter of the machine's memory is left to the searches."""
    from memory_core.vector_index import faiss_index

    path = tmp_path / "indexes" / "messages"
    path.parent.mkdir()
    built = FaissIndex(dim=32, policy=IndexPolicy(kind="hnsw"))
    built.build(_ids(400), _clustered(400))
    built.save(path)
    started = []
    real = faiss_index.prefetch_in_background
    monkeypatch.setattr(
        faiss_index, "prefetch_in_background", lambda p: started.append(real(p)) or started[-1]
    )
    mapped = FaissIndex.load(path, mapped=True)
    FaissIndex.load(path)  # a build's own load reads the whole file anyway: no thread
    (thread,) = started
    thread.join(timeout=30)
    file = os.path.realpath(path / faiss_index.INDEX_FILE)
    assert thread.daemon and thread.bytes_read == os.path.getsize(file)
    query = _clustered(3, seed=5)
    assert mapped.search(query, 5) == built.search(query, 5)

    monkeypatch.setattr(os, "sysconf", lambda name: 1024 if name == "SC_PHYS_PAGES" else 1)
    assert real(faiss_index.Path(file)) is None  # 1 KiB of memory: a quarter is smaller than the file


def test_empty_index_and_bad_input(tmp_path):
    empty = FaissIndex(dim=8)
    empty.build([], np.zeros((0, 8), dtype=np.float32))
    assert empty.search(np.ones(8, dtype=np.float32), 3).ids == [[]]
    empty.save(tmp_path / "empty")
    assert FaissIndex.load(tmp_path / "empty").size == 0
    index = FaissIndex(dim=8)
    with pytest.raises(ValueError, match="unique"):
        index.build(["a", "a"], np.ones((2, 8)))
    with pytest.raises(ValueError, match="matrix"):
        index.build(["a"], np.ones((1, 9)))
    with pytest.raises(ValueError, match="NaN"):
        index.build(["a"], np.full((1, 8), np.nan))
    with pytest.raises(ValueError, match="2 ids for 1"):
        index.build(["a", "b"], np.ones((1, 8)))


# ------------------------------------------------------------------------------------------ families
def test_corpus_families_match_their_sources_and_find_their_items(home, tmp_path):
    corpus = build_small_corpus(home, tmp_path)
    store = corpus.store
    embedder = HashingEmbedder(256)
    reports = {r.family: r for r in build_indexes(store, embedder, message_vectors="text").families}
    assert set(reports) == set(FAMILIES)
    assert {f: reports[f].size for f in FAMILIES} == {
        "topics": 2,
        "concepts": 4,
        "segments": 5,
        "messages": 10,
    }
    assert reports["topics"].source == "label_profile"  # the fixture's 4-d centroids are not in this space
    for family in FAMILIES:
        index = open_family_index(store, family)
        assert sorted(index.ids) == sorted(source_ids(store, family))
        assert index.meta["model"] == "hashing-256" and index.kind == "flat"
    mid = corpus.conversations["trip"][2]
    hit = open_family_index(store, "messages").search(embedder.embed([corpus.texts[mid]]), 3)
    assert hit.ids[0][0] == mid and hit.scores[0][0] == pytest.approx(1.0, abs=1e-5)
    hit = open_family_index(store, "concepts").search(
        embedder.embed(["Kyoto trip in April: cherry blossoms"]), 1
    )
    assert hit.ids[0] == [corpus.concepts["kyoto"]]

    # a rebuild embeds only what changed
    again = {r.family: r for r in build_indexes(store, embedder, message_vectors="text").families}
    assert all(again[f].embedded == 0 and again[f].reused == again[f].size for f in FAMILIES)
    with store.staging.begin() as conn:
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == corpus.concepts["shade"])
            .values(description="Only two hours of direct sun a day")
        )
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == corpus.concepts["beds"])
            .values(state="merged")
        )
    concepts = build_family_index(store, "concepts", embedder)
    assert (concepts.size, concepts.embedded, concepts.reused) == (3, 1, 2)
    assert corpus.concepts["beds"] not in open_family_index(store, "concepts").ids
    # another model never reuses vectors
    other = build_family_index(store, "messages", HashingEmbedder(128))
    assert other.embedded == 10 and other.reused == 0 and open_family_index(store, "messages").dim == 128


def test_indexes_stage_report_and_contracts(home, tmp_path):
    import json

    from memory_core.vector_index import checks as contracts

    corpus = build_small_corpus(home, tmp_path)
    store = corpus.store
    report = build_indexes(store, HashingEmbedder(256))
    meta = report.as_metadata()
    assert json.loads(json.dumps(meta)) == meta  # plain JSON-able values
    assert [f["family"] for f in meta["families"]] == list(FAMILIES)
    assert meta["messages_size"] == meta["lexical_messages"] == 10 and meta["segments_kind"] == "flat"
    assert meta["embedded"] == sum(f["embedded"] for f in meta["families"]) > 0
    by_family = {r.family: r for r in report.families}
    assert by_family["messages"].source == "segments"  # derived from the segments index (`mixed`)
    assert contracts.index_ids_match_sources(store).passed
    found = contracts.index_finds_its_own_vectors(store)
    assert found.passed and {f["family"] for f in found.figures["families"]} == set(FAMILIES)

    # a concept retired after the build: the concepts index holds an id its source no longer has
    with store.staging.begin() as conn:
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == corpus.concepts["beds"])
            .values(state="merged")
        )
    ids = contracts.index_ids_match_sources(store)
    concepts = next(f for f in ids.figures["families"] if f["family"] == "concepts")
    assert not ids.passed and concepts["not_in_source"] == 1 and concepts["ok"] is False


def _pieces_corpus(home, tmp_path):
    """Five turns in two conversations; the first is long enough to span several 200-character segments."""
    from memory_core.ingest.loader import ingest_file
    from memory_core.segments import build_segments
    from tests.conftest import write_jsonl

    store = home.corpus("pieces")
    long_turn = " ".join(
        f"Day {d}: we walked the old town, ate at the market and took the tram." for d in range(9)
    )
    records = [
        {"id": i, "conversation_id": conv, "role": role, "author": role, "text": text,
         "created_at": f"2024-05-0{n + 1}T09:00:00Z"}
        for n, (i, conv, role, text) in enumerate([
            ("m1", "c1", "user", long_turn),
            ("m2", "c1", "assistant", "That sounds like a lovely week in Lisbon."),
            ("m3", "c1", "user", "Any tips for the flight home?"),
            ("m4", "c1", "assistant", "Book an aisle seat and bring snacks."),
            ("m5", "c2", "user", "Remind me to renew my passport."),
        ])
    ]  # fmt: skip
    ingest_file(store, write_jsonl(tmp_path / "pieces.jsonl", records), "jsonl")
    build_segments(store, token_cap=50)  # 200 characters: the long turn spans several segments
    return store


def test_message_vectors_derived_from_segments_are_their_pieces_weighted_mean(home, tmp_path):
    """The messages family built from the segments index: a message's vector is the length-weighted mean of
    the vectors of the segment pieces holding it (a long turn split over segments, a message alone in its
    segment), unit length; a whole turn sharing its segment is embedded from its own text. Written into one
    preallocated matrix and normalised in place."""
    from memory_core.embeddings.base import l2_normalise
    from memory_core.store.schema import segments
    from memory_core.vector_index.families import build_message_index_from_segments

    store, embedder = _pieces_corpus(home, tmp_path), HashingEmbedder(64)
    build_indexes(store, embedder)
    seg_index = open_family_index(store, "segments")
    seg_vectors = dict(zip(seg_index.ids, seg_index.vectors(range(seg_index.size)), strict=True))
    pieces: dict[str, list[tuple[str, int]]] = {}
    shared = set()
    with store.staging.connect() as conn:
        current = select(segments.c.segment_id, segments.c.message_spans).where(
            segments.c.superseded_at.is_(None)
        )
        for sid, spans in conn.execute(current):
            for span in spans:
                pieces.setdefault(span["message_id"], []).append((sid, max(1, span["end"] - span["start"])))
                if len({s["message_id"] for s in spans}) > 1:
                    shared.add(span["message_id"])
    with store.source.connect() as conn:
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text)).all())
    for own_text_when_shared in (True, False):
        build_message_index_from_segments(store, embedder, own_text_when_shared=own_text_when_shared)
        msg_index = open_family_index(store, "messages")
        stored = dict(zip(msg_index.ids, msg_index.vectors(range(msg_index.size)), strict=True))
        assert set(stored) == set(texts) and len(stored) == 5
        for mid, vector in stored.items():
            parts = pieces[mid]
            if own_text_when_shared and len(parts) == 1 and mid in shared:
                expected = embedder.embed([texts[mid]])[0]
            else:
                expected = sum(seg_vectors[sid] * n for sid, n in parts)
            np.testing.assert_allclose(vector, l2_normalise(np.asarray([expected]))[0], atol=1e-6)
            assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert max(len(p) for p in pieces.values()) > 1  # some message is held by several pieces


def test_the_own_text_turns_a_prefetch_embeds_are_the_calls_the_messages_family_makes(
    home, tmp_path, monkeypatch
):
    """`own_text_message_calls` (what a build embeds ahead, memory_assets/prefetch.py) is the very call a
    first build of the messages family makes: the turns sharing a segment (or, without own text, none)."""
    from memory_core.vector_index import families
    from memory_core.vector_index.families import (
        build_message_index_from_segments,
        family_path,
        own_text_message_calls,
    )
    from tests.conftest import RecordingEmbedder as Recording

    store = _pieces_corpus(home, tmp_path)
    build_indexes(store, HashingEmbedder(64), families=("segments",))
    for own_text_when_shared in (True, False):
        family_path(store, "messages").unlink(missing_ok=True)  # a first build: nothing to reuse
        recording = Recording(64)
        build_message_index_from_segments(store, recording, own_text_when_shared=own_text_when_shared)
        ahead = list(own_text_message_calls(store, own_text_when_shared=own_text_when_shared))
        assert ahead == recording.calls[::-1]  # the stage's calls, last first: the two meet in the middle
        monkeypatch.setattr(families, "OWN_TEXT_CALL", 1)  # a call per turn: several calls, two threads
        family_path(store, "messages").unlink(missing_ok=True)
        recording = Recording(64)
        build_message_index_from_segments(store, recording, own_text_when_shared=own_text_when_shared)
        ahead = list(own_text_message_calls(store, own_text_when_shared=own_text_when_shared))
        assert sorted(ahead) == sorted(recording.calls) and ahead == sorted(ahead, key=lambda c: -len(c[0]))
        monkeypatch.setattr(families, "OWN_TEXT_CALL", 64)
    own = [t for call in own_text_message_calls(store) for t in call]
    assert ahead == [] and own and not any(t.startswith("Day 0") for t in own)  # the long turn is derived


def test_topic_index_uses_centroids_in_the_embedding_space(home, tmp_path):
    corpus = build_small_corpus(home, tmp_path)
    embedder = HashingEmbedder(64)
    with corpus.store.source.connect() as conn:
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text)).all())
    garden = embedder.embed([texts[m] for m in corpus.conversations["garden"]]).mean(axis=0)
    trip = embedder.embed([texts[m] for m in corpus.conversations["trip"]]).mean(axis=0)
    with corpus.store.staging.begin() as conn:
        for key, centroid in (("garden", garden), ("travel", trip)):
            conn.execute(
                update(topics)
                .where(topics.c.topic_id == corpus.topics[key])
                .values(centroid=[float(x) for x in centroid])
            )
    report = build_family_index(corpus.store, "topics", embedder)
    assert report.source == "centroid" and report.embedded == 0
    hit = open_family_index(corpus.store, "topics").search(
        embedder.embed(["the balcony gets little sun for tomatoes"]), 2
    )
    assert hit.ids[0][0] == corpus.topics["garden"]
    assert family_path(corpus.store, "topics").is_symlink()
    with pytest.raises(ValueError, match="unknown index family"):
        family_path(corpus.store, "users")


def test_messages_are_derived_from_segments_only_by_a_build_of_both_families():
    """One rule for the stage and for the prefetch of own-text turns (memory_assets/prefetch.py)."""
    from memory_core.vector_index.stage import message_vector_source

    assert message_vector_source(("segments", "messages"), "mixed") == "mixed"
    assert message_vector_source(("topics", "segments", "messages"), "segments") == "segments"
    assert message_vector_source(("messages",), "mixed") == "text"  # no segments built: its own text
    assert message_vector_source(("segments", "concepts"), "mixed") == "text"  # no messages family at all
    assert message_vector_source(("segments", "messages"), "text") == "text"
