"""Domains and Anchor Entities: the macro layer above topics (docs/architecture.md §4.7).

Topic BELONGS_TO AnchorEntity BELONGS_TO Domain; the hierarchy an agent walks is
Domain → AnchorEntity → Topic → Concept → Segment → Message.

- Domains: topics clustered by the embeddings of their ``"{label}: {profile}"`` texts with the same tuner as
  topics (smaller budget; a corpus has tens to thousands of topics, so the PCA/single fallbacks are the usual
  path below `umap_min_points`). A topic HDBSCAN leaves as noise joins the domain whose centroid is nearest
  its profile embedding: every topic must sit somewhere in the hierarchy.
- Anchor Entities: per domain, the concepts most associated with the most of its topics. A topic's
  association with a concept is the larger of its RELATED_TO weight (/100, from `topic_concept_links`) and 1
  when the concept has active evidence in one of the topic's own segments (it is literally talked about
  there). Why both: the top-10 links are dominated by sentence-like concepts ("X volunteered at the
  shelter"), whose keys sit closer to a centroid than a bare name does, while the named things a domain
  revolves around ("Harry Potter", "LGBTQ", a project) show up as evidence across its topics.
  ``score(d, c) = type_factor(c) · mass(d, c) · mass(d, c) / mass(c)``: mass(d, c) sums the association
  over the domain's topics, mass(c) over all topics, so the second factor is the concept's share inside
  the domain (a person present everywhere is a weak anchor for any one domain). A concept must be
  evidenced in at least `min_anchor_topics` of the domain's topics (fewer when the domain is smaller): a
  RELATED_TO link alone does not make an anchor. Anchors are stable named things: entity and project
  concepts (`anchor_types`) with evidence in at least `min_anchor_support` segments; other types anchor only
  with a non-zero `other_type_factor` (0 by default: a sentence is no anchor).
- Each topic BELONGS_TO the anchor of its domain it is most associated with; a topic associated with none
  belongs to the domain's general anchor (``concept_id`` NULL), created only when needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import sparse
from sqlalchemy import bindparam, delete, func, select, update

from memory_core.concepts import LIVE_STATES
from memory_core.embeddings.base import Embedder, l2_normalise
from memory_core.ids import sha256_json, stable_uuid
from memory_core.llm.accounting import record_calls
from memory_core.store.db import CorpusStore, bulk_insert, utcnow
from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    concept_evidence,
    domains,
    residuals,
    topic_concept_links,
    topic_segments,
    topics,
)
from memory_core.topics.builds import find_reusable, record_build
from memory_core.topics.clustering import ObjectiveWeights
from memory_core.topics.describe import Describer, Description
from memory_core.topics.labels import term_labels
from memory_core.topics.prompts import DOMAIN_PROMPT, GroupInput
from memory_core.topics.reports import DomainsReport
from memory_core.topics.stage import embed_texts, topic_embedding_key
from memory_core.topics.tuner import SearchSpace, TunerConfig, TuningResult, tune

STAGE = "domains"


def default_domain_tuner() -> TunerConfig:
    return TunerConfig(
        n_trials=20,
        timeout_s=60.0,
        min_points=6,
        space=SearchSpace(
            n_neighbors=(3, 15),
            n_components=(2, 8),
            min_cluster_size=(2, 12),
            min_samples=(1, 5),
            max_cluster_share=3,
        ),
        weights=ObjectiveWeights(target_cluster_size=6),
    )


@dataclass(frozen=True)
class DomainsConfig:
    tuner: TunerConfig = field(default_factory=default_domain_tuner)
    anchors_per_domain: int = 5
    min_anchor_topics: int = 1
    anchor_types: tuple[str, ...] = ("entity", "project")
    # anchors are stable named things: other types never anchor, and a name needs this much support
    other_type_factor: float = 0.0
    min_anchor_support: int = 2
    label_terms: int = 3
    profile_terms: int = 10
    force: bool = False

    def hashed(self) -> dict:
        out = asdict(self)
        out.pop("force")
        return out


# ------------------------------------------------------------------------------------------------ pure logic
def assign_domains(
    profile_vectors: np.ndarray, tuner: TunerConfig
) -> tuple[np.ndarray, np.ndarray, TuningResult]:
    """(domain per topic — every topic gets one, whether HDBSCAN found it or it joined the nearest —,
    whether it was reassigned from noise, the tuning result)."""
    tuning = tune(profile_vectors, tuner)
    labels = tuning.best.labels.copy()
    noise = labels < 0
    if noise.any() and (~noise).any():
        vectors = l2_normalise(profile_vectors)
        n_domains = int(labels.max()) + 1
        centroids = l2_normalise(np.stack([vectors[labels == d].mean(axis=0) for d in range(n_domains)]))
        labels[noise] = np.argmax(vectors[noise] @ centroids.T, axis=1)
    return labels, noise, tuning


@dataclass
class AnchorChoice:
    domain: int
    concept: int | None  # column of the concept; None = the domain's general anchor
    score: float
    linked_topics: int  # topics of the domain linked to the concept


def choose_anchors(
    domain_of_topic: np.ndarray,
    assoc_topic: np.ndarray,
    assoc_concept: np.ndarray,
    assoc_value: np.ndarray,
    type_factor: np.ndarray,
    anchors_per_domain: int,
    min_anchor_topics: int = 1,
    preferred: np.ndarray | None = None,
    evidence: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list[AnchorChoice], np.ndarray]:
    """Anchors per domain and, per topic, the index (into the returned list) of the anchor it belongs to.

    `assoc_*` are the non-zero entries of the topic × concept association matrix (values in (0, 1]).
    `preferred` marks concepts of the preferred types: they take the anchor slots first, whatever their
    score; other concepts fill the slots left. With `evidence` (topic, concept index pairs: the concept has
    evidence in the topic's segments) a concept must have evidence in `min_anchor_topics` of the domain's
    topics to anchor it; a RELATED_TO link alone is not enough.
    """
    preferred = np.zeros(len(type_factor), bool) if preferred is None else np.asarray(preferred, bool)
    n_topics, n_concepts = len(domain_of_topic), len(type_factor)
    n_domains = int(domain_of_topic.max()) + 1 if n_topics else 0
    a = sparse.csr_matrix((assoc_value, (assoc_topic, assoc_concept)), shape=(n_topics, n_concepts))
    member = sparse.csr_matrix(
        (np.ones(n_topics), (domain_of_topic, np.arange(n_topics))), shape=(n_domains, n_topics)
    )
    mass = (member @ a).toarray()  # domains × concepts
    linked = (member @ (a > 0).astype(np.float64)).toarray()  # topics of the domain associated
    if evidence is not None:
        e = sparse.csr_matrix(
            (np.ones(len(evidence[0])), (evidence[0], evidence[1])), shape=(n_topics, n_concepts)
        )
        eligible = (member @ (e > 0).astype(np.float64)).toarray()  # topics of the domain it is evidenced in
    else:
        eligible = linked
    total = np.asarray(a.sum(axis=0)).ravel()
    share = np.divide(mass, total[None, :], out=np.zeros_like(mass), where=total[None, :] > 0)
    scores = type_factor[None, :] * mass * share
    domain_sizes = np.bincount(domain_of_topic, minlength=n_domains)
    anchors: list[AnchorChoice] = []
    by_domain: dict[int, list[int]] = {}
    for d in range(n_domains):
        needed = min(min_anchor_topics, int(domain_sizes[d]))
        candidates = np.flatnonzero((scores[d] > 0) & (eligible[d] >= needed))
        rank = np.lexsort((candidates, -scores[d, candidates], ~preferred[candidates]))
        order = candidates[rank][:anchors_per_domain]
        by_domain[d] = []
        for c in order.tolist():
            by_domain[d].append(len(anchors))
            anchors.append(AnchorChoice(d, c, float(scores[d, c]), int(linked[d, c])))
    anchor_of_topic = np.empty(n_topics, dtype=np.int64)
    general: dict[int, int] = {}
    for t in range(n_topics):
        d = int(domain_of_topic[t])
        row = a.getrow(t)
        values = dict(zip(row.indices.tolist(), row.data.tolist(), strict=True))
        best = max(
            (i for i in by_domain[d] if values.get(anchors[i].concept, 0.0) > 0),
            key=lambda i: (values[anchors[i].concept], preferred[anchors[i].concept], anchors[i].score, -i),
            default=None,
        )
        if best is None:
            if d not in general:
                general[d] = len(anchors)
                anchors.append(AnchorChoice(d, None, 0.0, 0))
            best = general[d]
        anchor_of_topic[t] = best
    return anchors, anchor_of_topic


def association(
    n_topics: int,
    links: list[tuple[int, int, float]],
    evidence: list[tuple[int, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-zero entries of the topic × concept association: max(link weight / 100, 1 if evidence)."""
    values: dict[tuple[int, int], float] = {}
    for t, c, weight in links:
        values[(t, c)] = max(values.get((t, c), 0.0), weight / 100.0)
    for t, c in evidence:
        values[(t, c)] = 1.0
    keys = sorted(values)
    return (
        np.array([k[0] for k in keys], dtype=np.int64),
        np.array([k[1] for k in keys], dtype=np.int64),
        np.array([values[k] for k in keys], dtype=np.float64),
    )


# ------------------------------------------------------------------------------------------------ stage
def build_domains(
    store: CorpusStore,
    embedder: Embedder,
    config: DomainsConfig,
    describer: Describer,
    run_id: str,
    log: Callable[[str], None] | None = None,
) -> DomainsReport:
    started = time.perf_counter()
    say = log or (lambda _m: None)
    with store.staging.connect() as conn:
        topic_rows = conn.execute(
            select(topics.c.topic_id, topics.c.label, topics.c.profile, topics.c.size).order_by(
                topics.c.topic_id
            )
        ).all()
        links = conn.execute(
            select(
                topic_concept_links.c.topic_id, topic_concept_links.c.concept_id, topic_concept_links.c.weight
            ).order_by(topic_concept_links.c.topic_id, topic_concept_links.c.concept_id)
        ).all()
        ce, ts, cc = concept_evidence, topic_segments, canonical_concepts
        evidence = conn.execute(
            select(ts.c.topic_id, ce.c.concept_id)
            .select_from(
                ce.join(ts, ts.c.segment_id == ce.c.segment_id).join(cc, cc.c.concept_id == ce.c.concept_id)
            )
            .where(ts.c.topic_id.is_not(None), ce.c.status == "active", cc.c.state.in_(LIVE_STATES))
            .distinct()
            .order_by(ts.c.topic_id, ce.c.concept_id)
        ).all()
        concept_ids = sorted({link.concept_id for link in links} | {e.concept_id for e in evidence})
        concepts = {
            r.concept_id: r
            for r in conn.execute(
                select(cc.c.concept_id, cc.c.title, cc.c.type).where(cc.c.concept_id.in_(concept_ids))
            )
        }
        # how many segments each concept has evidence in: a name told once is no anchor
        spread = dict(
            conn.execute(
                select(ce.c.concept_id, func.count(func.distinct(ce.c.segment_id)))
                .where(ce.c.concept_id.in_(concept_ids), ce.c.status == "active")
                .group_by(ce.c.concept_id)
            ).all()
        )
    input_sha = sha256_json(
        [
            embedder.model_name,
            [[t.topic_id, t.label, t.profile] for t in topic_rows],
            [[link.topic_id, link.concept_id, round(link.weight, 3)] for link in links],
            [[e.topic_id, e.concept_id] for e in evidence],
            [
                [c, concepts[c].title, concepts[c].type, spread.get(c, 0)]
                for c in concept_ids
                if c in concepts
            ],
        ]
    )
    config_dict = {
        **config.hashed(),
        "describer": describer.identity(),
        "embedding_model": embedder.model_name,
    }
    config_sha = sha256_json(config_dict)
    build = None if config.force else find_reusable(store, STAGE, input_sha, config_sha, domains, "domains")
    if build:
        say(f"{store.name}: topics and links unchanged since build {build['build_id']}: reused")
        return DomainsReport(
            "unchanged",
            build["figures"],
            build["trials"],
            describer=describer.identity(),
            seconds=time.perf_counter() - started,
        )

    keys = [topic_embedding_key(t.label, t.profile) for t in topic_rows]
    t0 = time.perf_counter()
    profile_vectors = embed_texts(embedder, keys, 256)
    embed_seconds = time.perf_counter() - t0
    if topic_rows:
        domain_of_topic, reassigned, tuning = assign_domains(profile_vectors, config.tuner)
    else:
        domain_of_topic, reassigned, tuning = np.zeros(0, np.int64), np.zeros(0, bool), None
    n_domains = int(domain_of_topic.max()) + 1 if len(domain_of_topic) else 0

    # anchors
    concept_index = {c: i for i, c in enumerate(concept_ids)}
    topic_index = {t.topic_id: i for i, t in enumerate(topic_rows)}
    stable = np.array([spread.get(c, 0) >= config.min_anchor_support for c in concept_ids], dtype=bool)
    named = np.array([c in concepts and concepts[c].type in config.anchor_types for c in concept_ids], bool)
    type_factor = np.where(named & stable, 1.0, np.where(named, 0.0, config.other_type_factor))
    assoc = association(
        len(topic_rows),
        [
            (topic_index[x.topic_id], concept_index[x.concept_id], x.weight)
            for x in links
            if x.topic_id in topic_index
        ],
        [
            (topic_index[e.topic_id], concept_index[e.concept_id])
            for e in evidence
            if e.topic_id in topic_index
        ],
    )
    evidenced = [
        (topic_index[e.topic_id], concept_index[e.concept_id]) for e in evidence if e.topic_id in topic_index
    ]
    anchors, anchor_of_topic = choose_anchors(
        domain_of_topic,
        *assoc,
        type_factor,
        config.anchors_per_domain,
        config.min_anchor_topics,
        preferred=named,
        evidence=(
            np.array([t for t, _ in evidenced], dtype=np.int64),
            np.array([c for _, c in evidenced], dtype=np.int64),
        ),
    )

    # descriptions
    t0 = time.perf_counter()
    members = [np.flatnonzero(domain_of_topic == d) for d in range(n_domains)]
    texts = [[f"{topic_rows[i].label}. {topic_rows[i].profile}" for i in m] for m in members]
    centroids = (
        l2_normalise(np.stack([profile_vectors[m].mean(axis=0) for m in members])) if n_domains else None
    )
    term = term_labels(
        ["\n".join(t) for t in texts],
        label_terms=config.label_terms,
        profile_terms=config.profile_terms,
        centroids=centroids,
        embed=lambda terms: embed_texts(embedder, terms, 256),
    )
    offline = [Description(label=t.label, profile=t.profile, source="c-tf-idf") for t in term]
    inputs = [
        GroupInput(
            keywords=tuple(k for k, _ in term[d].keywords[: config.profile_terms]),
            excerpts=tuple(texts[d][:12]),
            size=len(members[d]),
        )
        for d in range(n_domains)
    ]
    described = describer.describe(STAGE, DOMAIN_PROMPT, inputs, offline)
    if described.call_rows:
        record_calls(store.staging, described.call_rows)
    label_seconds = time.perf_counter() - t0

    now = utcnow()
    domain_ids = [
        stable_uuid("domain", sha256_json(sorted(topic_rows[i].topic_id for i in m))) for m in members
    ]
    anchor_ids = [
        stable_uuid(
            "anchor", domain_ids[a.domain], concept_ids[a.concept] if a.concept is not None else "general"
        )
        for a in anchors
    ]
    topic_count = np.bincount(anchor_of_topic, minlength=len(anchors)) if len(anchors) else np.zeros(0)
    domain_rows = [
        dict(
            domain_id=domain_ids[d],
            label=described.descriptions[d].label,
            profile=described.descriptions[d].profile,
            size=len(members[d]),
            recorded_at=now,
            keywords=[[k, w] for k, w in term[d].keywords],
            label_source=described.descriptions[d].source,
            segment_count=int(sum(topic_rows[i].size for i in members[d])),
        )
        for d in range(n_domains)
    ]
    anchor_rows = [
        dict(
            anchor_id=anchor_ids[i],
            domain_id=domain_ids[a.domain],
            concept_id=concept_ids[a.concept] if a.concept is not None else None,
            label=concepts[concept_ids[a.concept]].title
            if a.concept is not None
            else f"{domain_rows[a.domain]['label']} (general)",
            score=round(a.score, 6),
            recorded_at=now,
            topic_count=int(topic_count[i]),
            linked_topic_count=a.linked_topics,
        )
        for i, a in enumerate(anchors)
    ]
    memberships = [
        {"tid": t.topic_id, "did": domain_ids[domain_of_topic[i]], "aid": anchor_ids[anchor_of_topic[i]]}
        for i, t in enumerate(topic_rows)
    ]
    figures = _figures(domain_rows, anchor_rows, memberships, topic_rows, reassigned, tuning)
    figures.update(
        embedding_model=embedder.model_name,
        embed_seconds=round(embed_seconds, 3),
        label_seconds=round(label_seconds, 3),
        llm_calls=len(described.call_rows),
        describe_failures=len(described.residual_rows),
    )
    with store.staging.begin() as conn:
        conn.execute(delete(anchor_entities))
        conn.execute(delete(domains))
        bulk_insert(conn, domains, domain_rows)
        bulk_insert(conn, anchor_entities, anchor_rows)
        conn.execute(update(topics).values(domain_id=None, anchor_id=None))
        if memberships:
            conn.execute(
                update(topics)
                .where(topics.c.topic_id == bindparam("tid"))
                .values(domain_id=bindparam("did"), anchor_id=bindparam("aid")),
                memberships,
            )
        conn.execute(delete(residuals).where(residuals.c.stage == STAGE))  # they described the old build
        if described.residual_rows:
            conn.execute(residuals.insert(), described.residual_rows)
        figures["seconds"] = round(time.perf_counter() - started, 3)
        record_build(
            conn, STAGE, input_sha, config_sha, config_dict, figures, tuning.trials if tuning else [], run_id
        )
    say(
        f"{store.name}: {n_domains} domains, {len(anchor_rows)} anchor entities over {len(topic_rows)} topics"
    )
    return DomainsReport(
        "built" if topic_rows else "empty",
        figures,
        tuning.trials if tuning else [],
        describer=describer.identity(),
        seconds=time.perf_counter() - started,
    )


def _figures(
    domain_rows, anchor_rows, memberships, topic_rows, reassigned, tuning: TuningResult | None
) -> dict:
    labels = {t.topic_id: t.label for t in topic_rows}
    anchors_by_domain: dict[str, list[dict]] = {}
    for a in anchor_rows:
        anchors_by_domain.setdefault(a["domain_id"], []).append(a)
    topics_by_domain: dict[str, list[str]] = {}
    for m in memberships:
        topics_by_domain.setdefault(m["did"], []).append(labels[m["tid"]])
    s = tuning.best.scores if tuning else None
    return {
        "topics": len(topic_rows),
        "domains": len(domain_rows),
        "anchors": len(anchor_rows),
        "general_anchors": sum(1 for a in anchor_rows if a["concept_id"] is None),
        "topics_in_general_anchor": sum(a["topic_count"] for a in anchor_rows if a["concept_id"] is None),
        "topics_reassigned_from_noise": int(np.asarray(reassigned).sum()),
        "domain_sizes": sorted((d["size"] for d in domain_rows), reverse=True),
        "path": tuning.path if tuning else "empty",
        "reduction": tuning.reduction if tuning else "",
        "params": tuning.best.params.as_dict() if tuning and tuning.best.params else None,
        "trials_run": len(tuning.trials) if tuning else 0,
        "silhouette_embedding": round(s.silhouette_embedding, 4)
        if s and s.silhouette_embedding is not None
        else None,
        "noise_ratio_before_reassignment": round(s.noise_ratio, 4) if s else 0.0,
        "tune_seconds": round(tuning.seconds, 3) if tuning else 0.0,
        "domain_table": [
            {
                "domain": d["label"],
                "topics": d["size"],
                "segments": d["segment_count"],
                "anchors": "; ".join(
                    f"{a['label']} ({a['topic_count']})"
                    for a in sorted(anchors_by_domain.get(d["domain_id"], []), key=lambda a: -a["score"])
                ),
                "topic labels": " | ".join(topics_by_domain.get(d["domain_id"], [])[:6]),
            }
            for d in sorted(domain_rows, key=lambda d: (-d["size"], d["domain_id"]))
        ],
    }
