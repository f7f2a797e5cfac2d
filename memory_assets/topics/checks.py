"""Contracts and quality bounds of the topic layer, as partitioned asset checks with explicit severity."""

import dagster as dg
from pydantic import Field
from sqlalchemy import and_, func, select

from memory_assets.common import check, corpus_store
from memory_assets.partitions import corpus_partitions
from memory_assets.topics.assets import domains as domains_asset
from memory_assets.topics.assets import topics as topics_asset
from memory_assets.topics.assets import weighted_links as links_asset
from memory_core.concepts import LIVE_STATES
from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    domains,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
)
from memory_core.topics.builds import latest_build
from memory_resources.storage import MemoryStorage


class TopicQualityBounds(dg.Config):
    """Quality bounds of a topic build (the silhouette is the one the objective used: embedding space by
    default, where MiniLM conversation segments score ~0.1; the reduced-space figure is several times higher)."""

    silhouette_min: float = Field(
        default=0.05, description="silhouette of the clustered segments at least this"
    )
    silhouette_max: float = Field(default=1.0)
    noise_ratio_min: float = Field(default=0.0)
    noise_ratio_max: float = Field(default=0.5, description="share of segments left as noise at most this")


def _topics_figures(context, storage: MemoryStorage) -> dict:
    with corpus_store(context, storage).staging.connect() as conn:
        build = latest_build(conn, "topics")
    return build["figures"] if build else {}


@dg.asset_check(
    asset=topics_asset,
    partitions_def=corpus_partitions,
    description="clustering silhouette within the configured bounds (no silhouette exists for the one-topic "
    "fallback of a small corpus: passes, saying so)",
)
def topic_silhouette_in_bounds(
    context: dg.AssetCheckExecutionContext, config: TopicQualityBounds, storage: MemoryStorage
) -> dg.AssetCheckResult:
    f = _topics_figures(context, storage)
    value = f.get("silhouette")
    applicable = value is not None
    return check(
        (not applicable) or config.silhouette_min <= value <= config.silhouette_max,
        dg.AssetCheckSeverity.WARN,  # a quality target: it flags drift, it does not stop downstream stages
        silhouette=value if applicable else "n/a",
        silhouette_space=f.get("silhouette_space", ""),
        path=f.get("path", "none"),
        bounds=dg.MetadataValue.json([config.silhouette_min, config.silhouette_max]),
    )


@dg.asset_check(
    asset=topics_asset,
    partitions_def=corpus_partitions,
    description="share of segments left as noise within the configured bounds",
)
def topic_noise_in_bounds(
    context: dg.AssetCheckExecutionContext, config: TopicQualityBounds, storage: MemoryStorage
) -> dg.AssetCheckResult:
    f = _topics_figures(context, storage)
    value = f.get("noise_ratio", 0.0)
    return check(
        bool(f) and config.noise_ratio_min <= value <= config.noise_ratio_max,
        dg.AssetCheckSeverity.WARN,
        noise_ratio=value,
        noise_segments=f.get("noise_segments", 0),
        segments=f.get("segments", 0),
        bounds=dg.MetadataValue.json([config.noise_ratio_min, config.noise_ratio_max]),
    )


@dg.asset_check(
    asset=topics_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every current segment is in topic_segments once; every non-noise one in an existing topic whose "
    "size counts it; no row for a retired or unknown segment",
)
def segments_in_one_topic(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    ts, s, t = topic_segments, segments, topics
    with corpus_store(context, storage).staging.connect() as conn:
        current = conn.execute(select(func.count()).where(s.c.superseded_at.is_(None))).scalar_one()
        missing = conn.execute(
            select(func.count())
            .select_from(s.outerjoin(ts, ts.c.segment_id == s.c.segment_id))
            .where(s.c.superseded_at.is_(None), ts.c.segment_id.is_(None))
        ).scalar_one()
        stray = conn.execute(
            select(func.count())
            .select_from(
                ts.outerjoin(s, and_(s.c.segment_id == ts.c.segment_id, s.c.superseded_at.is_(None)))
            )
            .where(s.c.segment_id.is_(None))
        ).scalar_one()
        dangling = conn.execute(
            select(func.count())
            .select_from(ts.outerjoin(t, t.c.topic_id == ts.c.topic_id))
            .where(ts.c.topic_id.is_not(None), t.c.topic_id.is_(None))
        ).scalar_one()
        members = dict(
            conn.execute(
                select(ts.c.topic_id, func.count()).where(ts.c.topic_id.is_not(None)).group_by(ts.c.topic_id)
            ).all()
        )
        sizes = dict(conn.execute(select(t.c.topic_id, t.c.size)).all())
    wrong_sizes = sorted(tid for tid in sizes if sizes[tid] != members.get(tid, 0))
    return check(
        missing == 0 and stray == 0 and dangling == 0 and not wrong_sizes,
        dg.AssetCheckSeverity.ERROR,
        current_segments=current,
        segments_without_row=missing,
        rows_without_current_segment=stray,
        rows_with_unknown_topic=dangling,
        topics_with_wrong_size=len(wrong_sizes),
        examples=dg.MetadataValue.json(wrong_sizes[:10]),
    )


@dg.asset_check(
    asset=links_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every link weight in (min_weight, 100], at most top_k links per topic, both ends exist and the "
    "concept is live",
)
def link_weights_in_range(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    lk, t, c = topic_concept_links, topics, canonical_concepts
    with corpus_store(context, storage).staging.connect() as conn:
        build = latest_build(conn, "weighted_links")
        cfg = build["config"] if build else {"min_weight": 20.0, "top_k": 10}
        out_of_range = conn.execute(
            select(func.count()).where((lk.c.weight <= cfg["min_weight"]) | (lk.c.weight > 100.0))
        ).scalar_one()
        links = conn.execute(select(func.count()).select_from(lk)).scalar_one()
        per_topic = select(lk.c.topic_id, func.count().label("n")).group_by(lk.c.topic_id).subquery()
        most = conn.execute(select(func.coalesce(func.max(per_topic.c.n), 0))).scalar_one()
        dangling_topic = conn.execute(
            select(func.count())
            .select_from(lk.outerjoin(t, t.c.topic_id == lk.c.topic_id))
            .where(t.c.topic_id.is_(None))
        ).scalar_one()
        dead_concept = conn.execute(
            select(func.count())
            .select_from(lk.outerjoin(c, c.c.concept_id == lk.c.concept_id))
            .where((c.c.concept_id.is_(None)) | (c.c.state.not_in(LIVE_STATES)))
        ).scalar_one()
    return check(
        out_of_range == 0 and most <= cfg["top_k"] and dangling_topic == 0 and dead_concept == 0,
        dg.AssetCheckSeverity.ERROR,
        links=links,
        weights_out_of_range=out_of_range,
        min_weight=cfg["min_weight"],
        most_links_of_a_topic=most,
        top_k=cfg["top_k"],
        links_to_unknown_topic=dangling_topic,
        links_to_dead_concept=dead_concept,
    )


@dg.asset_check(
    asset=domains_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every topic BELONGS_TO an anchor entity that BELONGS_TO the topic's domain; domain sizes match",
)
def topics_in_hierarchy(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    t, a, d = topics, anchor_entities, domains
    with corpus_store(context, storage).staging.connect() as conn:
        n_topics = conn.execute(select(func.count()).select_from(t)).scalar_one()
        orphans = conn.execute(
            select(func.count())
            .select_from(
                t.outerjoin(a, a.c.anchor_id == t.c.anchor_id).outerjoin(d, d.c.domain_id == t.c.domain_id)
            )
            .where((a.c.anchor_id.is_(None)) | (d.c.domain_id.is_(None)) | (a.c.domain_id != t.c.domain_id))
        ).scalar_one()
        counted = dict(conn.execute(select(t.c.domain_id, func.count()).group_by(t.c.domain_id)).all())
        sizes = dict(conn.execute(select(d.c.domain_id, d.c.size)).all())
        n_anchors = conn.execute(select(func.count()).select_from(a)).scalar_one()
    wrong = sorted(k for k in sizes if sizes[k] != counted.get(k, 0))
    return check(
        orphans == 0 and not wrong,
        dg.AssetCheckSeverity.ERROR,
        topics=n_topics,
        domains=len(sizes),
        anchors=n_anchors,
        topics_outside_hierarchy=orphans,
        domains_with_wrong_size=len(wrong),
    )
