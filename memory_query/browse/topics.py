"""Topics as a person reads them: the topic map (each topic where the build's 2-D layout of its segments put
it, sized by its segments, coloured by its domain, with its strongest concepts), the hierarchy of domains →
anchor entities → topics, and one topic's page."""

from __future__ import annotations

import json

import numpy as np
from sqlalchemy import func, select

from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    conversations,
    domains,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
)
from memory_query.browse.memo import memoised
from memory_query.browse.models import (
    ConceptLink,
    MapDomain,
    MapTopic,
    SegmentExcerpt,
    TopicMap,
    TopicPage,
    TopicTree,
    TreeAnchor,
    TreeDomain,
    TreeTopic,
)
from memory_query.reader import CorpusReader

LAYOUT_FILE = ("reports", "topic_layout.json")  # written by the topics stage beside its picture
TOP_CONCEPTS = 4  # per topic on the map
REPRESENTATIVES = 6  # segments shown on a topic's page
EXCERPT = 360


def topic_map(reader: CorpusReader) -> TopicMap:
    """The map of the corpus's topics (kept while the staging store is unchanged)."""
    return memoised(reader, "browse:topic_map", ("staging",), lambda: _build_map(reader))


def _build_map(reader: CorpusReader) -> TopicMap:
    t = topics.c
    with reader.store.staging.connect() as conn:
        rows = conn.execute(
            select(t.topic_id, t.label, t.size, t.conversation_count, t.domain_id).order_by(
                t.size.desc(), t.label
            )
        ).all()
        domain_rows = conn.execute(
            select(domains.c.domain_id, domains.c.label, domains.c.size).order_by(domains.c.size.desc(), domains.c.label)
        ).all()  # fmt: skip
        concepts = _top_concepts(conn)
        total = conn.execute(select(func.count()).select_from(topic_segments)).scalar_one()
        noise = conn.execute(
            select(func.count()).select_from(topic_segments).where(topic_segments.c.topic_id.is_(None))
        ).scalar_one()
    ids = [r.topic_id for r in rows]
    positions, points, method = _layout(reader, ids)
    if positions is None:
        positions, method = _centroid_layout(reader, ids), "PCA of the topic centroids"
    scale = _Scale(list(positions.values()) + [(x, y) for x, y, _ in points])
    index = {topic_id: i for i, topic_id in enumerate(ids)}
    return TopicMap(
        corpus=reader.store.name,
        method=method,
        topics=[
            MapTopic(
                topic_id=r.topic_id,
                label=r.label,
                size=r.size,
                conversations=r.conversation_count,
                x=scale.x(positions[r.topic_id][0]),
                y=scale.y(positions[r.topic_id][1]),
                domain_id=r.domain_id,
                top_concepts=concepts.get(r.topic_id, []),
            )
            for r in rows
        ],
        domains=[
            MapDomain(domain_id=d.domain_id, label=d.label, topics=d.size, colour=i)
            for i, d in enumerate(domain_rows)
        ],
        points=[(scale.x(x), scale.y(y), index.get(topic_id, -1)) for x, y, topic_id in points],
        noise_segments=noise,
        segments=total,
    )


def _top_concepts(conn) -> dict[str, list[str]]:
    link, k = topic_concept_links.c, canonical_concepts.c
    out: dict[str, list[str]] = {}
    for topic_id, title in conn.execute(
        select(link.topic_id, k.title)
        .select_from(topic_concept_links.join(canonical_concepts, k.concept_id == link.concept_id))
        .order_by(link.topic_id, link.weight.desc())
    ):
        titles = out.setdefault(topic_id, [])
        if len(titles) < TOP_CONCEPTS:
            titles.append(title)
    return out


def _layout(reader: CorpusReader, ids: list[str]):
    """(topic id → centre, sampled points as (x, y, topic id or None), method) from the build's layout file,
    or (None, [], "") when there is none or it describes other topics than the stored ones."""
    path = reader.store.path(*LAYOUT_FILE)
    try:
        layout = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, [], ""
    centres = layout.get("centres") or {}
    if not ids or any(i not in centres for i in ids):
        return None, [], ""
    clusters = layout.get("topic_ids") or []
    points = [
        (x, y, clusters[c] if 0 <= c < len(clusters) else None) for x, y, c in layout.get("points") or []
    ]
    return {i: tuple(centres[i]) for i in ids}, points, f"{layout.get('method', 'layout')} of the segments"


def _centroid_layout(reader: CorpusReader, ids: list[str]) -> dict[str, tuple[float, float]]:
    """The topics' centroids on their first two principal components (a corpus built before the layout
    file existed)."""
    if not ids:
        return {}
    with reader.store.staging.connect() as conn:
        rows = dict(conn.execute(select(topics.c.topic_id, topics.c.centroid)).all())
    vectors = np.asarray([rows[i] for i in ids], dtype=np.float64)
    if len(ids) < 3:
        return {i: (float(n), 0.0) for n, i in enumerate(ids)}
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    coords = u[:, :2] * s[:2]
    return {i: (float(x), float(y)) for i, (x, y) in zip(ids, coords, strict=True)}


class _Scale:
    """Coordinates into [0, 1] on both axes (one factor for both: the layout's shape is kept)."""

    def __init__(self, xy: list[tuple[float, float]]):
        arr = np.asarray(xy, dtype=float).reshape(-1, 2)
        self.lo = arr.min(axis=0) if len(arr) else np.zeros(2)
        span = (arr.max(axis=0) - self.lo) if len(arr) else np.ones(2)
        self.span = float(max(span.max(), 1e-9))

    def x(self, value: float) -> float:
        return round((value - self.lo[0]) / self.span, 4)

    def y(self, value: float) -> float:
        return round((value - self.lo[1]) / self.span, 4)


# ------------------------------------------------------------------------------------------ the tree
def topic_tree(reader: CorpusReader) -> TopicTree:
    """Domains → anchor entities → topics, the largest first; topics under no anchor and in no domain in
    groups of their own."""
    t, a, d = topics.c, anchor_entities.c, domains.c
    with reader.store.staging.connect() as conn:
        domain_rows = conn.execute(
            select(d.domain_id, d.label, d.segment_count).order_by(d.segment_count.desc(), d.label)
        ).all()
        anchor_rows = conn.execute(
            select(a.anchor_id, a.domain_id, a.label, a.concept_id).order_by(a.score.desc(), a.label)
        ).all()
        topic_rows = conn.execute(
            select(t.topic_id, t.label, t.size, t.domain_id, t.anchor_id).order_by(t.size.desc(), t.label)
        ).all()
    by_anchor: dict[str | None, list[TreeTopic]] = {}
    loose: dict[str | None, list[TreeTopic]] = {}  # by domain: topics under no anchor
    for r in topic_rows:
        topic = TreeTopic(topic_id=r.topic_id, label=r.label, size=r.size)
        if r.anchor_id:
            by_anchor.setdefault(r.anchor_id, []).append(topic)
        else:
            loose.setdefault(r.domain_id, []).append(topic)
    anchors: dict[str, list[TreeAnchor]] = {}
    for r in anchor_rows:
        anchors.setdefault(r.domain_id, []).append(
            TreeAnchor(anchor_id=r.anchor_id, label=r.label, concept_id=r.concept_id, topics=by_anchor.get(r.anchor_id, []))
        )  # fmt: skip
    tree = []
    for r in domain_rows:
        branch = anchors.get(r.domain_id, [])
        if loose.get(r.domain_id):
            branch = [
                *branch,
                TreeAnchor(anchor_id=None, label="(no anchor)", concept_id=None, topics=loose[r.domain_id]),
            ]
        tree.append(
            TreeDomain(domain_id=r.domain_id, label=r.label, segments=r.segment_count or 0, anchors=branch)
        )
    if loose.get(None):
        orphans = TreeAnchor(anchor_id=None, label="(no anchor)", concept_id=None, topics=loose[None])
        segments_ = sum(topic.size for topic in loose[None])
        tree.append(TreeDomain(domain_id=None, label="(no domain)", segments=segments_, anchors=[orphans]))
    return TopicTree(corpus=reader.store.name, domains=tree)


# ------------------------------------------------------------------------------------------ one topic
def topic_page(reader: CorpusReader, topic_id: str) -> TopicPage | None:
    t, link, k = topics.c, topic_concept_links.c, canonical_concepts.c
    with reader.store.staging.connect() as conn:
        row = conn.execute(select(topics).where(t.topic_id == topic_id)).mappings().first()
        if row is None:
            return None
        domain = conn.execute(select(domains.c.label).where(domains.c.domain_id == row["domain_id"])).scalar()
        anchor = conn.execute(
            select(anchor_entities.c.label).where(anchor_entities.c.anchor_id == row["anchor_id"])
        ).scalar()
        linked = conn.execute(
            select(link.concept_id, k.title, k.type, link.weight)
            .select_from(topic_concept_links.join(canonical_concepts, k.concept_id == link.concept_id))
            .where(link.topic_id == topic_id)
            .order_by(link.weight.desc())
        ).all()
        wanted = list(row["representative_segment_ids"] or [])[:REPRESENTATIVES]
        seg_rows = {
            r.segment_id: r
            for r in conn.execute(
                select(segments.c.segment_id, segments.c.conversation_id, segments.c.message_ids, segments.c.text, segments.c.created_at)
                .where(segments.c.segment_id.in_(wanted))
            )
        }  # fmt: skip
    titles = _conversation_titles(reader, {r.conversation_id for r in seg_rows.values()})
    representatives = [
        SegmentExcerpt(
            segment_id=s.segment_id,
            conversation_id=s.conversation_id,
            conversation_title=titles.get(s.conversation_id, "(untitled)"),
            first_message_id=(s.message_ids or [""])[0],
            created_at=s.created_at,
            text=s.text if len(s.text) <= EXCERPT else s.text[: EXCERPT - 1] + "…",
        )
        for s in (seg_rows.get(i) for i in wanted)
        if s is not None
    ]
    return TopicPage(
        corpus=reader.store.name,
        topic_id=topic_id,
        label=row["label"],
        profile=row["profile"],
        keywords=[k for k, _ in (row["keywords"] or [])][:15],
        size=row["size"],
        conversations=row["conversation_count"],
        first_seen=row["first_seen"],
        last_seen=row["last_seen"],
        domain=domain,
        domain_id=row["domain_id"],
        anchor=anchor,
        label_source=row["label_source"],
        silhouette=row["silhouette"],
        concepts=[
            ConceptLink(concept_id=r.concept_id, title=r.title, type=r.type, weight=round(r.weight, 1))
            for r in linked
        ],
        representatives=representatives,
    )


def _conversation_titles(reader: CorpusReader, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    c = conversations.c
    with reader.store.source.connect() as conn:
        return dict(conn.execute(select(c.conversation_id, c.title).where(c.conversation_id.in_(ids))).all())
