"""The topics stage: a corpus's current segments → tuned clusters → topics with labels, in the staging store.

    report = build_topics(store, embedder, TopicsConfig(), Describer(), run_id="...")

Steps: embed every current segment's text (the shared cache makes this free after the first time) → `tune`
→ per cluster a topic: centroid = the normalised mean of its members' vectors, representatives = the members
nearest it, a c-TF-IDF label/profile (or an LLM's, falling back to c-TF-IDF per topic), and the validation
figure: cosine distance between the embedding of ``"{label}: {profile}"`` and the centroid.

Writes, in one transaction: `topics`, `topic_segments` (every current segment: its topic, or NULL for noise
with its nearest topic beside it, so noise stays retrievable), links of vanished topics removed, and a
`topic_builds` row. Then reactions are linked DURING the topic of their segment (or its nearest topic).

Identity and reruns: a topic's id is a hash of its member segment ids, so the same clusters get the same
ids. A rerun whose input (segment ids, embedding model) and configuration hash like the last build's reuses
it and writes nothing — identical tables, no second tuning. A changed input is tuned again, starting from
the parameters the last build chose (the tuner's warm start), with UMAP's compiled kernels kept in the
memory home's cache (`umap_loader`), so neither the search nor numba's compile starts from scratch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
from sqlalchemy import bindparam, delete, select, update

from memory_core.embeddings.base import Embedder, l2_normalise
from memory_core.embeddings.chunks import embed_chunked
from memory_core.ids import sha256_json, stable_uuid
from memory_core.llm.accounting import record_calls
from memory_core.store.db import CorpusStore, bulk_insert, utcnow
from memory_core.store.schema import (
    messages,
    residuals,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
    user_reactions,
)
from memory_core.topics.builds import find_reusable, latest_build, record_build
from memory_core.topics.clustering import Clustering, exact_knn, umap_embed
from memory_core.topics.describe import Describer, Description
from memory_core.topics.labels import name_stop_words, term_labels
from memory_core.topics.prompts import TOPIC_PROMPT, GroupInput
from memory_core.topics.reports import TopicsReport
from memory_core.topics.topic_map import TopicMap
from memory_core.topics.tuner import TunerConfig, TuningResult, tune
from memory_core.topics.umap_loader import numba_cache_dir

STAGE = "topics"
_SILHOUETTE_SAMPLES_MAX = 10000  # per-topic silhouettes are O(n²); above this only the corpus figure is kept


def topic_embedding_key(label: str, profile: str) -> str:
    """The text a topic is embedded by (validation distance, domains, the topic index): like a concept's."""
    return f"{label}: {profile}" if profile else label


@dataclass(frozen=True)
class TopicsConfig:
    tuner: TunerConfig = field(default_factory=TunerConfig)
    label_terms: int = 3
    profile_terms: int = 10
    candidate_terms: int = 30  # c-TF-IDF terms per topic considered for the label
    rerank_terms: bool = True  # order candidates by cosine to the centroid (see labels.py)
    representatives: int = 3  # stored per topic, nearest the centroid first
    llm_excerpts: int = 5  # representative segments shown to the LLM describer
    embed_batch: int = 64  # texts per embedding call, ordered by length (memory_core/embeddings/chunks.py)
    force: bool = False  # rebuild even when input and configuration are unchanged

    def hashed(self) -> dict:
        """What the build depends on (not `force`, not the batch size)."""
        out = asdict(self)
        out.pop("force")
        out.pop("embed_batch")
        return out


@dataclass
class _Segment:
    segment_id: str
    conversation_id: str
    text: str
    created_at: object


def load_segments(store: CorpusStore) -> list[_Segment]:
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(segments.c.segment_id, segments.c.conversation_id, segments.c.text, segments.c.created_at)
            .where(segments.c.superseded_at.is_(None))
            .order_by(segments.c.segment_id)
        ).all()
    return [_Segment(*r) for r in rows]


def clustered_unchanged(store: CorpusStore, model_name: str) -> bool:
    """Whether the corpus's last topics build clustered exactly its current segments with `model_name`'s
    vectors: the stage then reuses it (unless its configuration changed) and embeds nothing, so nothing need
    be embedded ahead for it (memory_assets/prefetch.py)."""
    with store.staging.connect() as conn:
        ids = list(
            conn.execute(
                select(segments.c.segment_id)
                .where(segments.c.superseded_at.is_(None))
                .order_by(segments.c.segment_id)
            ).scalars()
        )
        build = latest_build(conn, STAGE)
    return build is not None and build["input_sha256"] == _input_sha(model_name, ids)


def _input_sha(model_name: str, segment_ids: list[str]) -> str:
    return sha256_json([model_name, segment_ids])


def warm_start_for(store: CorpusStore, input_sha: str) -> list[dict]:
    """The tuner's warm-start points: the parameters the corpus's last topics build chose — or, when that
    build had this very input (a forced rebuild), the points it started from, so it comes out identical."""
    with store.staging.connect() as conn:
        build = latest_build(conn, STAGE)
    if build is None:
        return []
    figures = build["figures"] or {}
    if build["input_sha256"] == input_sha:
        return list(figures.get("warm_start") or [])
    return [figures["params"]] if figures.get("params") else []


def _speaker_names(store: CorpusStore) -> set[str]:
    with store.source.connect() as conn:
        return set(conn.execute(select(messages.c.author).distinct()).scalars())


def embed_texts(embedder: Embedder, texts: list[str], batch: int) -> np.ndarray:
    """Normalised vectors of `texts`, in `batch`-text calls on a spare core too (`embed_chunked`)."""
    if not texts:
        return np.zeros((0, getattr(embedder, "dim", 0) or 1), dtype=np.float32)
    return l2_normalise(embed_chunked(embedder, texts, batch))


def build_topics(
    store: CorpusStore,
    embedder: Embedder,
    config: TopicsConfig,
    describer: Describer,
    run_id: str,
    log: Callable[[str], None] | None = None,
) -> TopicsReport:
    started = time.perf_counter()
    say = log or (lambda _m: None)
    segs = load_segments(store)
    input_sha = _input_sha(embedder.model_name, [s.segment_id for s in segs])
    config_dict = {
        **config.hashed(),
        "describer": describer.identity(),
        "embedding_model": embedder.model_name,
    }
    config_sha = sha256_json(config_dict)
    build = (
        None
        if config.force
        else find_reusable(store, STAGE, input_sha, config_sha, topic_segments, "segments")
    )
    if build:
        say(f"{store.name}: segments and configuration unchanged since build {build['build_id']}: reused")
        linked = link_reactions(store)
        return TopicsReport(
            "unchanged",
            build["figures"],
            build["trials"],
            reactions_linked=linked,
            describer=describer.identity(),
            seconds=time.perf_counter() - started,
        )

    t0 = time.perf_counter()
    vectors = embed_texts(embedder, [s.text for s in segs], config.embed_batch)
    embed_seconds = time.perf_counter() - t0
    say(f"{store.name}: {len(segs)} segments embedded in {embed_seconds:.1f}s; tuning")
    warm_start = warm_start_for(store, input_sha)
    tuning = tune(
        vectors,
        config.tuner,
        log=say,
        warm_start=warm_start,
        numba_cache=numba_cache_dir(store.home.cache_dir),
    )
    clustering = tuning.best

    t0 = time.perf_counter()
    groups = _topic_groups(segs, vectors, clustering, config.representatives)
    offline = _offline_descriptions(store, segs, clustering, groups, config, embedder)
    inputs = [
        GroupInput(
            keywords=tuple(t for t, _ in g["keywords"][: config.profile_terms]),
            excerpts=tuple(segs[i].text for i in g["nearest"][: config.llm_excerpts]),
            size=len(g["members"]),
        )
        for g in groups
    ]
    described = describer.describe(STAGE, TOPIC_PROMPT, inputs, offline)
    if described.call_rows:
        record_calls(store.staging, described.call_rows)
    label_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    descriptions = described.descriptions
    keys = [topic_embedding_key(d.label, d.profile) for d in descriptions]
    label_vectors = embed_texts(embedder, keys, config.embed_batch) if keys else np.zeros((0, 1))
    label_only = embed_texts(embedder, [d.label for d in descriptions], config.embed_batch) if keys else None
    centroids = np.stack([g["centroid"] for g in groups]) if groups else np.zeros((0, vectors.shape[1]))
    distances = 1.0 - np.einsum("ij,ij->i", label_vectors, centroids) if groups else np.zeros(0)
    label_only_distances = 1.0 - np.einsum("ij,ij->i", label_only, centroids) if groups else np.zeros(0)
    validate_seconds = time.perf_counter() - t0

    now = utcnow()
    topic_rows, segment_rows = _rows(segs, vectors, clustering, groups, descriptions, distances, now)
    figures = _figures(
        segs,
        clustering,
        tuning,
        topic_rows,
        distances,
        label_only_distances,
        config.tuner.weights.silhouette_space,
    )
    figures.update(
        warm_start=warm_start,
        embedding_model=embedder.model_name,
        embed_seconds=round(embed_seconds, 3),
        label_seconds=round(label_seconds, 3),
        validate_seconds=round(validate_seconds, 3),
        llm_calls=len(described.call_rows),
        describe_failures=len(described.residual_rows),
    )
    t0 = time.perf_counter()
    topic_map = _topic_map(vectors, clustering, tuning, [r["label"] for r in topic_rows], config.tuner.seed)
    topic_map.topic_ids = [r["topic_id"] for r in topic_rows]  # cluster c is topic_rows[c]
    figures["map_seconds"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    with store.staging.begin() as conn:
        conn.execute(delete(topic_segments))
        conn.execute(delete(topics))
        bulk_insert(conn, topics, topic_rows)
        bulk_insert(conn, topic_segments, segment_rows)
        # links of topics that no longer exist go (weighted_links rewrites the rest on its next run)
        conn.execute(
            delete(topic_concept_links).where(
                topic_concept_links.c.topic_id.not_in(select(topics.c.topic_id))
            )
        )
        conn.execute(delete(residuals).where(residuals.c.stage == STAGE))  # they described the old build
        if described.residual_rows:
            conn.execute(residuals.insert(), described.residual_rows)
        figures["write_seconds"] = round(time.perf_counter() - t0, 3)
        figures["seconds"] = round(time.perf_counter() - started, 3)
        record_build(conn, STAGE, input_sha, config_sha, config_dict, figures, tuning.trials, run_id)
    linked = link_reactions(store)
    status = "built" if segs else "empty"
    say(
        f"{store.name}: {len(topic_rows)} topics, noise {figures['noise_ratio']}, "
        f"silhouette {figures['silhouette']} ({tuning.path}/{tuning.reduction})"
    )
    return TopicsReport(
        status,
        figures,
        tuning.trials,
        map=topic_map,
        reactions_linked=linked,
        describer=describer.identity(),
        seconds=time.perf_counter() - started,
    )


def _topic_groups(
    segs: list[_Segment], vectors: np.ndarray, clustering: Clustering, representatives: int
) -> list[dict]:
    """Per cluster (in label order): members, normalised centroid, members by closeness to it."""
    groups = []
    for label in range(clustering.scores.n_clusters):
        members = np.flatnonzero(clustering.labels == label)
        centroid = l2_normalise(vectors[members].mean(axis=0, keepdims=True))[0]
        sims = vectors[members] @ centroid
        order = np.lexsort((members, -sims))  # nearest first, ties by position (segment id order)
        groups.append(
            {
                "members": members,
                "centroid": centroid,
                "similarity": dict(zip(members.tolist(), sims.tolist(), strict=True)),
                "nearest": members[order].tolist(),
                "representatives": [segs[i].segment_id for i in members[order][:representatives]],
                "keywords": [],
            }
        )
    return groups


def _offline_descriptions(
    store: CorpusStore,
    segs: list[_Segment],
    clustering: Clustering,
    groups: list[dict],
    config: TopicsConfig,
    embedder: Embedder,
) -> list[Description]:
    if not groups:
        return []
    docs = ["\n".join(segs[i].text for i in g["members"]) for g in groups]
    noise = np.flatnonzero(clustering.labels < 0)
    noise_doc = "\n".join(segs[i].text for i in noise) if len(noise) else None
    labels = term_labels(
        docs,
        name_stop_words(_speaker_names(store)),
        noise_doc=noise_doc,
        label_terms=config.label_terms,
        profile_terms=config.profile_terms,
        candidates=config.candidate_terms,
        centroids=np.stack([g["centroid"] for g in groups]) if config.rerank_terms else None,
        embed=(lambda terms: embed_texts(embedder, terms, config.embed_batch))
        if config.rerank_terms
        else None,
    )
    for group, label in zip(groups, labels, strict=True):
        group["keywords"] = label.keywords
    return [Description(label=lab.label, profile=lab.profile, source="c-tf-idf") for lab in labels]


def _topic_silhouettes(vectors: np.ndarray, labels: np.ndarray) -> dict[int, float]:
    from sklearn.metrics import silhouette_samples

    mask = labels >= 0
    if len(set(labels[mask].tolist())) < 2 or mask.sum() > _SILHOUETTE_SAMPLES_MAX:
        return {}
    values = silhouette_samples(vectors[mask], labels[mask], metric="cosine")
    return {int(c): float(values[labels[mask] == c].mean()) for c in np.unique(labels[mask])}


def _rows(segs, vectors, clustering, groups, descriptions, distances, now) -> tuple[list[dict], list[dict]]:
    silhouettes = _topic_silhouettes(vectors, clustering.labels)
    topic_rows, topic_ids = [], []
    for label, (group, desc) in enumerate(zip(groups, descriptions, strict=True)):
        member_ids = sorted(segs[i].segment_id for i in group["members"])
        topic_id = stable_uuid("topic", sha256_json(member_ids))
        topic_ids.append(topic_id)
        times = [segs[i].created_at for i in group["members"]]
        topic_rows.append(
            dict(
                topic_id=topic_id,
                label=desc.label,
                profile=desc.profile,
                keywords=[[t, w] for t, w in group["keywords"]],
                centroid=[round(float(x), 6) for x in group["centroid"]],
                size=len(member_ids),
                silhouette=round(silhouettes[label], 6) if label in silhouettes else None,
                label_centroid_distance=round(float(distances[label]), 6),
                domain_id=None,
                anchor_id=None,
                first_seen=min(times),
                last_seen=max(times),
                recorded_at=now,
                label_source=desc.source,
                representative_segment_ids=group["representatives"],
                conversation_count=len({segs[i].conversation_id for i in group["members"]}),
            )
        )
    centroids = np.stack([g["centroid"] for g in groups]) if groups else None
    segment_rows = []
    for i, seg in enumerate(segs):
        label = int(clustering.labels[i])
        row = dict(
            segment_id=seg.segment_id,
            topic_id=None,
            probability=0.0,
            outlier_score=round(float(clustering.outlier_scores[i]), 6),
            centroid_similarity=None,
            nearest_topic_id=None,
        )
        if label >= 0:
            row.update(
                topic_id=topic_ids[label],
                probability=round(float(clustering.probabilities[i]), 6),
                centroid_similarity=round(groups[label]["similarity"][i], 6),
            )
        elif centroids is not None:
            sims = centroids @ vectors[i]
            nearest = int(np.argmax(sims))
            row.update(
                nearest_topic_id=topic_ids[nearest], centroid_similarity=round(float(sims[nearest]), 6)
            )
        segment_rows.append(row)
    return topic_rows, segment_rows


def _figures(
    segs, clustering: Clustering, tuning: TuningResult, topic_rows, distances, label_only, space: str
) -> dict:
    s = clustering.scores
    sizes = sorted((r["size"] for r in topic_rows), reverse=True)
    sil = s.silhouette(space)  # the space the objective used: the headline figure
    fits = tuning.umap_fit_seconds

    def stat(values, fn) -> float | None:
        return round(float(fn(values)), 4) if len(values) else None

    return {
        "segments": len(segs),
        "topics": len(topic_rows),
        "noise_segments": int((clustering.labels < 0).sum()),
        "noise_ratio": round(s.noise_ratio, 4),
        "silhouette": round(sil, 4) if sil is not None else None,
        "silhouette_space": space,
        "silhouette_embedding": round(s.silhouette_embedding, 4)
        if s.silhouette_embedding is not None
        else None,
        "silhouette_reduced": round(s.silhouette_reduced, 4) if s.silhouette_reduced is not None else None,
        "outlier_mean": round(s.outlier_mean, 4),
        "objective": round(s.objective, 4),
        "path": tuning.path,
        "reduction": tuning.reduction,
        "params": clustering.params.as_dict() if clustering.params else None,
        "trials_run": len(tuning.trials),
        "best_trial": tuning.best_trial,
        "truncated": tuning.truncated,
        "stopped": tuning.stopped,
        "warm_started": tuning.warm_started,
        "sampled": tuning.sampled,
        "sizes": sizes,
        "size_min": sizes[-1] if sizes else 0,
        "size_median": float(np.median(sizes)) if sizes else 0.0,
        "size_max": sizes[0] if sizes else 0,
        "label_centroid_distance_mean": stat(distances, np.mean),
        "label_centroid_distance_median": stat(distances, np.median),
        "label_centroid_distance_max": stat(distances, np.max),
        "label_only_distance_mean": stat(label_only, np.mean),
        "tune_seconds": round(tuning.seconds, 3),
        "umap_warmup_seconds": round(tuning.umap_warmup_seconds, 3),
        "umap_fits": len(fits),
        "umap_fit_seconds_median": round(float(np.median(fits)), 3) if fits else None,
        "knn_seconds": round(tuning.knn_seconds, 3),
        "topic_table": [
            {
                "label": r["label"],
                "size": r["size"],
                "conversations": r["conversation_count"],
                "distance": r["label_centroid_distance"],
                "silhouette": r["silhouette"],
                "keywords": ", ".join(k for k, _ in r["keywords"][:6]),
            }
            for r in sorted(topic_rows, key=lambda r: (-r["size"], r["topic_id"]))[:40]
        ],
    }


def _topic_map(
    vectors, clustering: Clustering, tuning: TuningResult, names: list[str], seed: int
) -> TopicMap:
    """2-D layout of the segments: UMAP (the tuned neighbourhood size) when the topics came from UMAP,
    otherwise the first two principal components."""
    n = vectors.shape[0]
    if n < 3:
        return TopicMap(np.zeros((n, 2)), clustering.labels, names, "none")
    params = clustering.params
    if tuning.reduction == "umap" and params is not None:
        k = max(2, min(params.n_neighbors, n - 1))
        coords = umap_embed(vectors, 2, k, 0.1, seed, exact_knn(vectors, k))
        return TopicMap(coords, clustering.labels, names, f"UMAP (n_neighbors={k})")
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    u, s, _ = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    return TopicMap((u[:, :2] * s[:2]).astype(np.float32), clustering.labels, names, "PCA")


def link_reactions(store: CorpusStore) -> int:
    """Set each reaction's DURING topic: its segment's topic, or the nearest topic when the segment is noise."""
    with store.staging.connect() as conn:
        mapping = {
            seg: topic or nearest
            for seg, topic, nearest in conn.execute(
                select(
                    topic_segments.c.segment_id, topic_segments.c.topic_id, topic_segments.c.nearest_topic_id
                )
            )
        }
    with store.reflective.begin() as conn:
        current = conn.execute(select(user_reactions.c.segment_id, user_reactions.c.topic_id)).all()
        changes = {seg: mapping.get(seg) for seg, topic in current if mapping.get(seg) != topic}
        if changes:
            conn.execute(
                update(user_reactions)
                .where(user_reactions.c.segment_id == bindparam("seg"))
                .values(topic_id=bindparam("tid")),
                [{"seg": seg, "tid": tid} for seg, tid in changes.items()],
            )
    return sum(1 for seg, _ in current if mapping.get(seg))
