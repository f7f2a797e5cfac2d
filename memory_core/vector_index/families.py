"""The four index families of a corpus (docs/architecture.md §4.9): topics, concepts, segments and messages.

| family   | ids                                   | vector                                                  |
|----------|---------------------------------------|---------------------------------------------------------|
| topics   | topics.topic_id                       | the topic centroid when it has the embedder's size, else the embedding of "label: profile" |
| concepts | canonical_concepts not merged/split   | embedding of "{title}: {description}" (docs/architecture.md §4.6 key)  |
| segments | current segments                      | embedding of the segment text                           |
| messages | messages                              | embedding of the message text (the last-resort path)    |

Rows stream in batches (each text is read once); vectors of unchanged items (same id, same content key,
same embedding model) are taken from the previous build instead of being embedded again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, func, select

from memory_core.embeddings.base import Embedder, l2_normalise
from memory_core.embeddings.chunks import chunked, embed_chunked
from memory_core.ids import sha256_json, sha256_text
from memory_core.ontology.concepts import concept_embedding_key
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, messages, segments, topics
from memory_core.vector_index.faiss_index import FaissIndex, IndexPolicy

FAMILIES = ("topics", "concepts", "segments", "messages")
READ_BATCH = 2000


@dataclass
class FamilyReport:
    family: str
    kind: str
    size: int
    dim: int
    params: dict
    source: str  # "text" | "centroid" | "label_profile"
    embedded: int  # texts embedded in this build
    reused: int  # vectors taken from the previous build (same id, content and model)
    embed_seconds: float
    build_seconds: float
    seconds: float
    path: str

    def as_metadata(self) -> dict:
        return {
            "kind": self.kind,
            "size": self.size,
            "dim": self.dim,
            "source": self.source,
            "embedded": self.embedded,
            "reused": self.reused,
            "embed_seconds": round(self.embed_seconds, 3),
            "build_seconds": round(self.build_seconds, 3),
            **self.params,
        }


@dataclass(frozen=True)
class _Item:
    id: str
    key: str  # content key: same key => same vector
    text: str | None
    vector: list[float] | None = None


def family_path(store: CorpusStore, family: str) -> Path:
    _check(family)
    return store.path("indexes", family)


def open_family_index(store: CorpusStore, family: str, mapped: bool = False) -> FaissIndex | None:
    """The current index of a family, or None when it has not been built (`mapped`: see FaissIndex.load)."""
    path = family_path(store, family)
    return FaissIndex.load(path, mapped=mapped) if path.exists() else None


def _check(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown index family {family!r} (choose from {', '.join(FAMILIES)})")


def _source(store: CorpusStore, family: str) -> tuple[Engine, object]:
    if family == "messages":
        m = messages.c
        return store.source, select(m.message_id.label("id"), m.text, m.content_sha256.label("key")).order_by(
            m.message_id
        )
    if family == "segments":
        s = segments.c
        return store.staging, select(s.segment_id.label("id"), s.text).where(
            s.superseded_at.is_(None)
        ).order_by(s.segment_id)
    if family == "concepts":
        c = canonical_concepts.c
        # merged / split concepts are pointers kept for history (their evidence moved to other concepts)
        return store.staging, select(c.concept_id.label("id"), c.title, c.description).where(
            c.state.not_in(("merged", "split"))
        ).order_by(c.concept_id)
    t = topics.c
    return store.staging, select(t.topic_id.label("id"), t.label, t.profile, t.centroid).order_by(t.topic_id)


def source_ids(store: CorpusStore, family: str) -> list[str]:
    """The ids a family's index must hold, from its source table (what the asset check compares)."""
    _check(family)
    engine, stmt = _source(store, family)
    with engine.connect() as conn:
        return [r.id for r in conn.execute(stmt.with_only_columns(stmt.selected_columns.id))]


def _count(store: CorpusStore, family: str) -> int:
    engine, stmt = _source(store, family)
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(stmt.order_by(None).subquery())).scalar_one()


def _use_centroids(store: CorpusStore, dim: int) -> bool:
    """Topic centroids live in the segment-embedding space: usable when every one has the embedder's size."""
    t = topics.c
    with store.staging.connect() as conn:
        sizes = {len(c or []) for c in conn.execute(select(t.centroid)).scalars()}
    return sizes == {dim}


def _items(store: CorpusStore, family: str, centroids: bool) -> Iterator[list[_Item]]:
    engine, stmt = _source(store, family)
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True, yield_per=READ_BATCH).execute(stmt)
        for part in result.partitions(READ_BATCH):
            if family == "messages":
                yield [_Item(r.id, r.key, r.text) for r in part]
            elif family == "segments":
                yield [_Item(r.id, sha256_text(r.text), r.text) for r in part]
            elif family == "concepts":
                batch = []
                for r in part:
                    text = concept_embedding_key(r.title, r.description)
                    batch.append(_Item(r.id, sha256_text(text), text))
                yield batch
            elif centroids:
                yield [_Item(r.id, sha256_json(r.centroid), None, r.centroid) for r in part]
            else:
                batch = []
                for r in part:
                    text = f"{r.label}: {r.profile}"
                    batch.append(_Item(r.id, sha256_text(text), text))
                yield batch


def _previous_build(path) -> FaissIndex | None:
    try:
        return FaissIndex.load(path) if path.exists() else None
    except (ValueError, FileNotFoundError, RuntimeError):
        return None  # an unreadable previous build only costs re-embedding


class _Reuse:
    """Vectors of the previous build, by id, when they were made by the same model from the same source."""

    def __init__(self, previous: FaissIndex | None, model: str, source: str, dim: int):
        self.previous = None
        self.where: dict[str, tuple[int, str]] = {}
        if previous is None or previous.dim != dim:
            return
        meta = previous.meta
        keys = meta.get("keys")
        if meta.get("model") != model or meta.get("source") != source or not keys:
            return
        self.previous = previous
        self.where = {i: (pos, key) for pos, (i, key) in enumerate(zip(previous.ids, keys, strict=True))}

    def position(self, item: _Item) -> int | None:
        hit = self.where.get(item.id)
        return hit[0] if hit and hit[1] == item.key else None


def build_family_index(
    store: CorpusStore,
    family: str,
    embedder: Embedder,
    policy: IndexPolicy | None = None,
    batch_size: int = 256,
) -> FamilyReport:
    """Build one family's index from its source table and swap it in atomically."""
    _check(family)
    started = time.perf_counter()
    policy = policy or IndexPolicy()
    dim = embedder.dim
    centroids = family == "topics" and _use_centroids(store, dim)
    source = "centroid" if centroids else ("label_profile" if family == "topics" else "text")
    path = family_path(store, family)
    reuse = _Reuse(_previous_build(path), embedder.model_name, source, dim)

    capacity = max(_count(store, family), 1)
    matrix = np.empty((capacity, dim), dtype=np.float32)
    ids: list[str] = []
    keys: list[str] = []
    pending: list[tuple[int, str]] = []  # (row, text) waiting to be embedded
    reuse_rows: list[tuple[int, int]] = []  # (row, previous position)
    embedded = reused = 0
    embed_seconds = 0.0

    def flush_embeddings() -> None:
        nonlocal embedded, embed_seconds
        if not pending:
            return
        t0 = time.perf_counter()
        vectors = embedder.embed([text for _, text in pending])
        embed_seconds += time.perf_counter() - t0
        matrix[[row for row, _ in pending]] = vectors
        embedded += len(pending)
        pending.clear()

    def flush_reuse() -> None:
        if reuse_rows:
            matrix[[row for row, _ in reuse_rows]] = reuse.previous.vectors([pos for _, pos in reuse_rows])
            reuse_rows.clear()

    for batch in _items(store, family, centroids):
        for item in batch:
            row = len(ids)
            if row >= matrix.shape[0]:  # rows added since the count: grow
                matrix = np.concatenate([matrix, np.empty_like(matrix)])
            ids.append(item.id)
            keys.append(item.key)
            if item.vector is not None:  # a topic centroid: already a vector
                matrix[row] = l2_normalise(np.asarray([item.vector], dtype=np.float32))[0]
                continue
            pos = reuse.position(item)
            if pos is not None:
                reuse_rows.append((row, pos))
                reused += 1
                if len(reuse_rows) >= READ_BATCH:
                    flush_reuse()
                continue
            pending.append((row, item.text or ""))
            if len(pending) >= batch_size:
                flush_embeddings()
    flush_embeddings()
    flush_reuse()

    # the embedder's spec: the read side rebuilds exactly this embedder for queries
    meta = {
        "family": family,
        "model": embedder.model_name,
        "source": source,
        "embedder": embedder.spec().as_dict(),
    }
    index = FaissIndex(dim=dim, policy=policy, meta=meta)
    index.build(ids, matrix[: len(ids)], keys=keys)
    index.save(path)
    return FamilyReport(
        family=family,
        kind=index.kind,
        size=index.size,
        dim=dim,
        params=index.params,
        source=source,
        embedded=embedded,
        reused=reused,
        embed_seconds=embed_seconds,
        build_seconds=index.build_seconds,
        seconds=time.perf_counter() - started,
        path=str(path),
    )


def _segment_pieces(
    store: CorpusStore, position: Mapping[str, int] | None = None
) -> tuple[dict[str, list[tuple[int, int]]], set[str]]:
    """Per message, the (segment position, characters) of the current segment pieces that hold it, and the
    messages held by a segment that holds other messages too. `position` maps a segment id to its row of the
    segments index (a segment it lacks is left out); without it every current segment counts, at row 0."""
    weights: dict[str, list[tuple[int, int]]] = {}
    shared: set[str] = set()
    with store.staging.connect() as conn:
        for r in conn.execute(
            select(segments.c.segment_id, segments.c.message_spans).where(segments.c.superseded_at.is_(None))
        ):
            pos = position.get(r.segment_id) if position is not None else 0
            if pos is None:
                continue
            held = {span["message_id"] for span in r.message_spans}
            for span in r.message_spans:
                weights.setdefault(span["message_id"], []).append((pos, max(1, span["end"] - span["start"])))
                if len(held) > 1:
                    shared.add(span["message_id"])
    return weights, shared


def _own_text(message_id: str, parts: list | None, shared: set[str], own_text_when_shared: bool) -> bool:
    """Whether the messages family embeds a message's own text instead of deriving it from its segments."""
    return not parts or (own_text_when_shared and len(parts) == 1 and message_id in shared)


OWN_TEXT_CALL = 64  # turns per embedding call of the own-text pass (memory_core/embeddings/chunks.py)


def own_text_message_calls(store: CorpusStore, own_text_when_shared: bool = True) -> Iterator[list[str]]:
    """The embedding calls `build_message_index_from_segments` makes on a corpus's first build (the texts of
    the messages it embeds from their own text, in its calls), last first, for a prefetch that meets the
    stage in the middle; a generator, so the query over every message runs where it is consumed."""
    weights, shared = _segment_pieces(store)
    engine, stmt = _source(store, "messages")
    with engine.connect() as conn:
        texts = [
            r.text or ""
            for r in conn.execute(stmt)
            if _own_text(r.id, weights.get(r.id), shared, own_text_when_shared)
        ]
    del weights, shared
    yield from chunked(texts, OWN_TEXT_CALL)[::-1]


def build_message_index_from_segments(
    store: CorpusStore,
    embedder: Embedder,
    policy: IndexPolicy | None = None,
    own_text_when_shared: bool = True,
) -> FamilyReport:
    """The messages family reusing the segments index built just before: a message's vector is the
    length-weighted mean of the vectors of the segment pieces that hold it — except, with
    `own_text_when_shared`, a message held whole by one segment it shares with other messages (a turn of a
    round), which is embedded from its own text: a shared vector cannot tell the round's turns apart, and on
    LoCoMo that cost 0.011 turn recall_frac@5 (0.6869 own vectors vs 0.6755 all derived, every other path
    equal). Long messages split over several segments keep the derived vector (their own text would be
    truncated by the model anyway), and a message alone in its segment has its segment's vector. Messages in
    no current segment are embedded from their text."""
    started = time.perf_counter()
    policy = policy or IndexPolicy()
    segments_index = open_family_index(store, "segments")
    if segments_index is None:
        raise ValueError("the segments index must be built before messages can be derived from it")
    position = {sid: i for i, sid in enumerate(segments_index.ids)}
    seg_vectors = segments_index.vectors(range(segments_index.size))
    dim, segments_meta = segments_index.dim, segments_index.meta
    del segments_index  # its HNSW graph and stored vectors: ~1 GB at 560k segments, no longer read
    weights, shared = _segment_pieces(store, position)
    path = family_path(store, "messages")
    model = segments_meta.get("model", embedder.model_name)
    # an own-text vector is keyed "text:<content key>" so a rebuild can tell it from a derived one and reuse it
    reuse = _Reuse(_previous_build(path), model, "segments", dim)
    engine, stmt = _source(store, "messages")
    ids: list[str] = []
    keys: list[str] = []
    # filled in place: a list of per-message vectors, stacked and then normalised into new arrays, held
    # three copies of 1M × 384 floats at once (4.5 GB of the 1M build's 10.2 GiB peak)
    matrix = np.zeros((max(_count(store, "messages"), 1), dim), dtype=np.float32)
    missing: list[tuple[int, str]] = []
    reuse_rows: list[tuple[int, int]] = []
    with engine.connect() as conn:
        for r in conn.execute(stmt):
            row = len(ids)
            if row >= len(matrix):  # messages added since the count: grow
                matrix = np.concatenate([matrix, np.zeros_like(matrix)])
            ids.append(r.id)
            parts = weights.get(r.id)
            if not _own_text(r.id, parts, shared, own_text_when_shared):
                keys.append(r.key)
                w = np.asarray([n for _, n in parts], dtype=np.float32)
                matrix[row] = (seg_vectors[[p for p, _ in parts]] * w[:, None]).sum(axis=0)
                continue
            keys.append(f"text:{r.key}")
            hit = reuse.where.get(r.id)
            if hit and hit[1] == keys[-1]:
                reuse_rows.append((row, hit[0]))
            else:
                missing.append((row, r.text or ""))
    del seg_vectors, weights
    matrix = matrix[: len(ids)]
    if reuse_rows:
        matrix[[i for i, _ in reuse_rows]] = reuse.previous.vectors([pos for _, pos in reuse_rows])
    del reuse  # the previous build (1.7 GB at 1M messages), not needed through the embedding and the build
    embed_seconds = 0.0
    if missing:
        t0 = time.perf_counter()
        matrix[[i for i, _ in missing]] = embed_chunked(embedder, [t for _, t in missing], OWN_TEXT_CALL)
        embed_seconds = time.perf_counter() - t0
    matrix = l2_normalise(matrix, in_place=True)
    spec = segments_meta.get("embedder") or embedder.spec().as_dict()
    meta = {"family": "messages", "model": model, "source": "segments", "embedder": spec}
    index = FaissIndex(dim=dim, policy=policy, meta=meta)
    index.build(ids, matrix, keys=keys)
    index.save(path)
    return FamilyReport(
        family="messages",
        kind=index.kind,
        size=index.size,
        dim=dim,
        params=index.params,
        source="segments",
        embedded=len(missing),
        reused=len(ids) - len(missing),
        embed_seconds=embed_seconds,
        build_seconds=index.build_seconds,
        seconds=time.perf_counter() - started,
        path=str(path),
    )
