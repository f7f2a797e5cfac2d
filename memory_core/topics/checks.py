"""Contracts and quality bounds of the topic layer, evaluated on the staging store (the asset checks wrap
these)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, func, select

from memory_core.concepts import LIVE_STATES
from memory_core.reports import CheckResult
from memory_core.store.db import CorpusStore
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
from memory_core.topics.links import LinkConfig

_LINKS = LinkConfig()


@dataclass(frozen=True)
class TopicQualityBounds:
    """Quality bounds of a topic build. The silhouette is the one the objective used: embedding space by
    default, where MiniLM conversation segments score ~0.1; the reduced-space figure is several times
    higher."""

    silhouette_min: float = 0.05
    silhouette_max: float = 1.0
    noise_ratio_min: float = 0.0
    noise_ratio_max: float = 0.5


def _latest_figures(store: CorpusStore, stage: str) -> dict:
    with store.staging.connect() as conn:
        build = latest_build(conn, stage)
    return build["figures"] if build else {}


def topic_silhouette_in_bounds(store: CorpusStore, bounds: TopicQualityBounds) -> CheckResult:
    """The latest build's silhouette within the bounds (the one-topic fallback of a small corpus has none:
    it passes, saying so)."""
    f = _latest_figures(store, "topics")
    value = f.get("silhouette")
    applicable = value is not None
    return CheckResult(
        (not applicable) or bounds.silhouette_min <= value <= bounds.silhouette_max,
        {
            "silhouette": value if applicable else "n/a",
            "silhouette_space": f.get("silhouette_space", ""),
            "path": f.get("path", "none"),
            "bounds": [bounds.silhouette_min, bounds.silhouette_max],
        },
    )


def topic_noise_in_bounds(store: CorpusStore, bounds: TopicQualityBounds) -> CheckResult:
    """The share of segments left as noise by the latest build within the bounds."""
    f = _latest_figures(store, "topics")
    value = f.get("noise_ratio", 0.0)
    return CheckResult(
        bool(f) and bounds.noise_ratio_min <= value <= bounds.noise_ratio_max,
        {
            "noise_ratio": value,
            "noise_segments": f.get("noise_segments", 0),
            "segments": f.get("segments", 0),
            "bounds": [bounds.noise_ratio_min, bounds.noise_ratio_max],
        },
    )


def segments_in_one_topic(store: CorpusStore) -> CheckResult:
    """Every current segment is in topic_segments once; every non-noise one in an existing topic whose size
    counts it; no row for a retired or unknown segment."""
    ts, s, t = topic_segments, segments, topics
    with store.staging.connect() as conn:
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
    return CheckResult(
        missing == 0 and stray == 0 and dangling == 0 and not wrong_sizes,
        {
            "current_segments": current,
            "segments_without_row": missing,
            "rows_without_current_segment": stray,
            "rows_with_unknown_topic": dangling,
            "topics_with_wrong_size": len(wrong_sizes),
            "examples": wrong_sizes[:10],
        },
    )


def link_weights_in_range(store: CorpusStore) -> CheckResult:
    """Every link weight in (min_weight, 100], at most top_k links per topic (both as the latest links build
    was configured), both ends exist and the concept is live."""
    lk, t, c = topic_concept_links, topics, canonical_concepts
    with store.staging.connect() as conn:
        build = latest_build(conn, "weighted_links")
        cfg = build["config"] if build else {"min_weight": _LINKS.min_weight, "top_k": _LINKS.top_k}
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
    return CheckResult(
        out_of_range == 0 and most <= cfg["top_k"] and dangling_topic == 0 and dead_concept == 0,
        {
            "links": links,
            "weights_out_of_range": out_of_range,
            "min_weight": cfg["min_weight"],
            "most_links_of_a_topic": most,
            "top_k": cfg["top_k"],
            "links_to_unknown_topic": dangling_topic,
            "links_to_dead_concept": dead_concept,
        },
    )


def topics_in_hierarchy(store: CorpusStore) -> CheckResult:
    """Every topic BELONGS_TO an anchor entity that BELONGS_TO the topic's domain; domain sizes match."""
    t, a, d = topics, anchor_entities, domains
    with store.staging.connect() as conn:
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
    return CheckResult(
        orphans == 0 and not wrong,
        {
            "topics": n_topics,
            "domains": len(sizes),
            "anchors": n_anchors,
            "topics_outside_hierarchy": orphans,
            "domains_with_wrong_size": len(wrong),
        },
    )
