"""Weighted Topic RELATED_TO Concept links (docs/architecture.md §4.6).

Cosine between every topic centroid and every concept embedding (the cached vector of the concept's exact key
``"{title}: {description}"``), min-max normalised to 0–100; per topic the top `top_k` concepts with weight
above `min_weight` are kept.

How the min-max is taken (``normalisation``):
- ``global`` (default, as the seed does it): one min and one max over the whole topic × concept matrix. The
  transform is then the same monotone map of cosine for every topic, so a weight means the same thing in any
  topic (weight 60 in topic A is as close as weight 60 in topic B), and a topic far from every concept gets
  few or no links instead of having its least-bad concepts promoted to 100.
- ``per_topic``: min and max per topic row. Every topic gets a best concept at 100 — useful when each
  topic must have links, at the price of weights that cannot be compared across topics.

The computation is vectorised: blocks of topics × all concepts are one matrix product each (blocking bounds
memory at corpus scale: 11k topics × 160k concepts would be 7 GB as one float32 matrix). Min-max is
monotone, so the per-topic top-k by weight is the top-k by cosine: each block keeps its top-k cosines and the
global min/max, and weights are computed on the kept pairs at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from sqlalchemy import Connection, delete, select

from memory_core.concepts import LIVE_STATES
from memory_core.embeddings.base import Embedder, l2_normalise
from memory_core.errors import MemoryOSError
from memory_core.ids import sha256_json
from memory_core.ontology.concepts import concept_embedding_key
from memory_core.store.db import CorpusStore, bulk_insert
from memory_core.store.schema import canonical_concepts, topic_concept_links, topics
from memory_core.topics.builds import latest_build, record_build
from memory_core.topics.reports import LinksReport

Normalisation = Literal["global", "per_topic"]
_BLOCK = 512  # topics per matrix product


@dataclass(frozen=True)
class LinkConfig:
    top_k: int = 10
    min_weight: float = 20.0  # kept links have weight > min_weight
    normalisation: Normalisation = "global"


@dataclass
class LinkMatrix:
    """Kept links as parallel arrays (one entry per link), plus the normalisation's range."""

    topic_index: np.ndarray  # int, row of the topic
    concept_index: np.ndarray  # int, row of the concept
    cosine: np.ndarray
    weight: np.ndarray  # in (min_weight, 100]
    cos_min: float
    cos_max: float

    def __len__(self) -> int:
        return int(self.topic_index.shape[0])


def weighted_links(centroids: np.ndarray, concepts: np.ndarray, config: LinkConfig) -> LinkMatrix:
    """Links between topic centroids (T × d) and concept embeddings (C × d); both are L2-normalised here."""
    if config.normalisation not in ("global", "per_topic"):
        raise ValueError(f"unknown normalisation {config.normalisation!r}: use global or per_topic")
    n_topics, n_concepts = len(centroids), len(concepts)
    empty = LinkMatrix(
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), float("nan"), float("nan")
    )
    if n_topics == 0 or n_concepts == 0 or config.top_k <= 0:
        return empty
    t = l2_normalise(centroids)
    c = l2_normalise(concepts)
    if t.shape[1] != c.shape[1]:
        raise ValueError(
            f"topic centroids have {t.shape[1]} dimensions and concept embeddings {c.shape[1]}: "
            "they must come from the same embedding model"
        )
    k = min(config.top_k, n_concepts)
    top_idx = np.empty((n_topics, k), dtype=np.int64)
    top_cos = np.empty((n_topics, k), dtype=np.float64)
    row_min = np.empty(n_topics)
    row_max = np.empty(n_topics)
    for start in range(0, n_topics, _BLOCK):
        sims = (t[start : start + _BLOCK] @ c.T).astype(np.float64)
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < n_concepts else np.argsort(-sims, axis=1)
        part_cos = np.take_along_axis(sims, part, axis=1)
        order = np.lexsort((part, -part_cos), axis=1)  # by cosine desc, ties by concept row
        rows = slice(start, start + sims.shape[0])
        top_idx[rows] = np.take_along_axis(part, order, axis=1)
        top_cos[rows] = np.take_along_axis(part_cos, order, axis=1)
        row_min[rows] = sims.min(axis=1)
        row_max[rows] = sims.max(axis=1)
    if config.normalisation == "global":
        lo = np.full((n_topics, 1), row_min.min())
        hi = np.full((n_topics, 1), row_max.max())
    else:
        lo, hi = row_min[:, None], row_max[:, None]
    span = hi - lo
    # a degenerate range (one concept, or all cosines equal) makes every pair as related as the best one
    weight = np.where(span > 0, 100.0 * (top_cos - lo) / np.where(span > 0, span, 1.0), 100.0)
    keep = weight > config.min_weight
    topic_rows = np.broadcast_to(np.arange(n_topics)[:, None], top_idx.shape)
    return LinkMatrix(
        topic_index=topic_rows[keep],
        concept_index=top_idx[keep],
        cosine=top_cos[keep],
        weight=np.minimum(weight[keep], 100.0),
        cos_min=float(row_min.min()),
        cos_max=float(row_max.max()),
    )


# ------------------------------------------------------------------------------------------------ stage
STAGE = "weighted_links"


def load_concepts(conn: Connection) -> list[dict]:
    """Live concepts (active, weak) in id order, with the exact text their embedding is cached under."""
    cc = canonical_concepts
    rows = conn.execute(
        select(cc.c.concept_id, cc.c.title, cc.c.description, cc.c.type)
        .where(cc.c.state.in_(LIVE_STATES))
        .order_by(cc.c.concept_id)
    ).mappings()
    return [{**r, "key": concept_embedding_key(r["title"], r["description"])} for r in rows]


def build_links(
    store: CorpusStore,
    embedder: Embedder,
    config: LinkConfig,
    run_id: str,
    log: Callable[[str], None] | None = None,
) -> LinksReport:
    """Recompute every Topic RELATED_TO Concept link of a corpus (cheap: one blocked matrix product)."""
    started = time.perf_counter()
    with store.staging.connect() as conn:
        built = latest_build(conn, "topics")
        topics_model = (built or {}).get("figures", {}).get("embedding_model")
        if topics_model and topics_model != embedder.model_name:
            raise MemoryOSError(
                f"corpus {store.name!r}: its topics were built with the embedding model {topics_model!r} and the "
                f"links would use {embedder.model_name!r}; materialise `topics` with this model first"
            )
        topic_rows = conn.execute(
            select(topics.c.topic_id, topics.c.label, topics.c.centroid, topics.c.size).order_by(
                topics.c.topic_id
            )
        ).all()
        concepts = load_concepts(conn)
    t0 = time.perf_counter()
    concept_vectors = (
        np.concatenate(
            [
                embedder.embed([c["key"] for c in concepts[i : i + 1024]])
                for i in range(0, len(concepts), 1024)
            ]
        )
        if concepts
        else np.zeros((0, 1), dtype=np.float32)
    )
    embed_seconds = time.perf_counter() - t0
    centroids = np.asarray([r.centroid for r in topic_rows], dtype=np.float32)
    t0 = time.perf_counter()
    matrix = weighted_links(centroids, concept_vectors, config)
    link_seconds = time.perf_counter() - t0
    rows = [
        dict(
            topic_id=topic_rows[t].topic_id,
            concept_id=concepts[c]["concept_id"],
            weight=round(float(w), 4),
            cosine=round(float(cos), 6),
        )
        for t, c, w, cos in zip(
            matrix.topic_index.tolist(),
            matrix.concept_index.tolist(),
            matrix.weight.tolist(),
            matrix.cosine.tolist(),
            strict=True,
        )
    ]
    figures = _figures(topic_rows, concepts, rows, matrix, config)
    figures.update(
        embedding_model=embedder.model_name,
        embed_seconds=round(embed_seconds, 3),
        link_seconds=round(link_seconds, 4),
    )
    with store.staging.begin() as conn:
        # equal links are left as they are: a rewrite would move the table's write counter and make the
        # graph, which loads it, export an unchanged corpus again
        figures["rewritten"] = _stored_links(conn) != _link_keys(rows)
        if figures["rewritten"]:
            conn.execute(delete(topic_concept_links))
            bulk_insert(conn, topic_concept_links, rows)
        figures["seconds"] = round(time.perf_counter() - started, 3)
        input_sha = sha256_json([[t.topic_id for t in topic_rows], [c["concept_id"] for c in concepts]])
        config_dict = {**asdict(config), "embedding_model": embedder.model_name}
        record_build(conn, STAGE, input_sha, sha256_json(config_dict), config_dict, figures, [], run_id)
    if log:
        log(f"{store.name}: {len(rows)} links between {len(topic_rows)} topics and {len(concepts)} concepts")
    return LinksReport(figures=figures, topic_table=_topic_table(topic_rows, concepts, rows))


def _link_keys(rows) -> set[tuple]:
    return {(r["topic_id"], r["concept_id"], r["weight"], r["cosine"]) for r in rows}


def _stored_links(conn) -> set[tuple]:
    columns = [topic_concept_links.c[n] for n in ("topic_id", "concept_id", "weight", "cosine")]
    return _link_keys(conn.execute(select(*columns)).mappings())


def _figures(
    topic_rows, concepts: list[dict], rows: list[dict], matrix: LinkMatrix, config: LinkConfig
) -> dict:
    per_topic = np.bincount(matrix.topic_index, minlength=len(topic_rows)) if len(topic_rows) else np.zeros(0)
    weights = matrix.weight
    return {
        "topics": len(topic_rows),
        "concepts": len(concepts),
        "links": len(rows),
        "topics_linked": int((per_topic > 0).sum()),
        "topics_unlinked": int((per_topic == 0).sum()),
        "links_per_topic_mean": round(float(per_topic.mean()), 3) if len(per_topic) else 0.0,
        "concepts_linked": len({r["concept_id"] for r in rows}),
        "weight_min": round(float(weights.min()), 3) if len(weights) else None,
        "weight_median": round(float(np.median(weights)), 3) if len(weights) else None,
        "cosine_min": round(matrix.cos_min, 6) if len(topic_rows) and len(concepts) else None,
        "cosine_max": round(matrix.cos_max, 6) if len(topic_rows) and len(concepts) else None,
        "top_k": config.top_k,
        "min_weight": config.min_weight,
        "normalisation": config.normalisation,
    }


def _topic_table(topic_rows, concepts: list[dict], rows: list[dict]) -> list[dict]:
    """Per topic, largest first, its five strongest concepts with their weights."""
    by_topic: dict[str, list[dict]] = {}
    for r in rows:
        by_topic.setdefault(r["topic_id"], []).append(r)
    titles = {c["concept_id"]: c["title"] for c in concepts}
    return [
        {
            "topic": t.label,
            "size": t.size,
            "top concepts": "; ".join(
                f"{titles[r['concept_id']]} ({r['weight']:.0f})"
                for r in sorted(by_topic.get(t.topic_id, []), key=lambda r: -r["weight"])[:5]
            )
            or "—",
        }
        for t in sorted(topic_rows, key=lambda t: (-t.size, t.topic_id))
    ]
