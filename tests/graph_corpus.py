"""A small hand-built corpus with every table the graph loads: two real conversations ingested and cut into
segments by the pipeline's own code, then concepts, mentions, evidence, topics, a domain with an anchor,
fact states, a gardener action and a user reaction written as the later stages would write them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, select

from memory_core.ids import stable_uuid
from memory_core.ingest.loader import ingest_file
from memory_core.segments import build_segments
from memory_core.store.db import CorpusStore, MemoryHome
from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    concept_evidence,
    conversations,
    domains,
    fact_states,
    gardener_actions,
    mentions,
    messages,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
    user_reactions,
)

T0 = datetime(2024, 3, 1, 9, 0, 0)

GARDEN = [
    ("user", "I am building raised beds for tomatoes on the balcony."),
    ("assistant", "Raised beds drain well; tomatoes need six hours of sun."),
    ("user", "The balcony faces north, so the tomatoes get little sun."),
    ("assistant", "A north balcony suits lettuce and herbs better than tomatoes."),
    ("user", "Then I will switch the raised beds to lettuce and basil."),
    ("assistant", "Lettuce and basil will do fine in partial shade."),
]
TRIP = [
    ("user", "I want to visit Kyoto in April for the cherry blossoms."),
    ("assistant", "April is cherry blossom season in Kyoto; book early."),
    ("user", "I booked a ryokan near Gion for five nights."),
    ("assistant", "Gion is a good base for walking to the temples."),
]


@dataclass
class SmallCorpus:
    store: CorpusStore
    conversations: dict[str, list[str]] = field(default_factory=dict)  # source ref -> ordered message ids
    conversation_ids: dict[str, str] = field(default_factory=dict)  # source ref -> conversation id
    texts: dict[str, str] = field(default_factory=dict)  # message id -> text
    segments: dict[str, list[str]] = field(default_factory=dict)  # segment id -> message ids
    concepts: dict[str, str] = field(default_factory=dict)  # short name -> concept id
    topics: dict[str, str] = field(default_factory=dict)
    domain_id: str = ""
    anchor_id: str = ""
    fact_states: dict[str, str] = field(default_factory=dict)
    reaction_id: str = ""


def _jsonl(path: Path) -> Path:
    lines = []
    for conv, title, turns in (("garden", "Balcony garden", GARDEN), ("trip", "Kyoto trip", TRIP)):
        for i, (role, text) in enumerate(turns):
            lines.append(
                {
                    "id": f"{conv}-{i}",
                    "conversation_id": conv,
                    "role": role,
                    "author": "me" if role == "user" else "assistant",
                    "text": text,
                    "created_at": (T0 + timedelta(days=0 if conv == "garden" else 10, minutes=i)).isoformat(),
                    "title": title,
                }
            )
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def build_small_corpus(home: MemoryHome, tmp_path: Path, name: str = "garden") -> SmallCorpus:
    store = home.corpus(name)
    ingest_file(store, _jsonl(tmp_path / f"{name}.jsonl"), "jsonl")
    build_segments(store, token_cap=40)  # small cap: a round per segment
    out = SmallCorpus(store)
    with store.source.connect() as conn:
        refs = dict(conn.execute(select(conversations.c.conversation_id, conversations.c.source_ref)).all())
        rows = conn.execute(
            select(messages.c.message_id, messages.c.conversation_id, messages.c.text).order_by(
                messages.c.conversation_id, messages.c.position
            )
        ).all()
    for r in rows:
        out.texts[r.message_id] = r.text
        out.conversations.setdefault(refs[r.conversation_id], []).append(r.message_id)
        out.conversation_ids[refs[r.conversation_id]] = r.conversation_id
    with store.staging.connect() as conn:
        for r in conn.execute(
            select(segments.c.segment_id, segments.c.message_ids).where(segments.c.superseded_at.is_(None))
        ):
            out.segments[r.segment_id] = list(r.message_ids)
    seg_of = {mid: sid for sid, mids in out.segments.items() for mid in mids}

    def find(fragment: str) -> tuple[str, int, int]:
        for mid, text in out.texts.items():
            at = text.find(fragment)
            if at >= 0:
                return mid, at, at + len(fragment)
        raise AssertionError(fragment)

    now = T0 + timedelta(days=30)
    concept_specs = {
        "beds": ("Raised bed garden", "project", "Building raised beds on the balcony", ["raised beds"]),
        "shade": ("North-facing balcony", "entity", "The balcony gets little direct sun", ["north"]),
        "lettuce": (
            "Grow lettuce and basil",
            "goal",
            "Switch the beds to shade-tolerant crops",
            ["lettuce and basil"],
        ),
        "kyoto": (
            "Kyoto trip in April",
            "event",
            "A cherry blossom trip with a ryokan near Gion",
            ["Kyoto", "ryokan near Gion"],
        ),
    }
    out.concepts = {k: stable_uuid("concept", k) for k in concept_specs}
    relations = {
        "shade": [{"target_id": out.concepts["lettuce"], "relation": "causes", "confidence": 0.8}],
        "lettuce": [
            {"target_id": out.concepts["beds"], "relation": "instance_of", "confidence": 0.6},
            {
                "target_id": "no-such-concept",
                "relation": "supports",
                "confidence": 0.5,
            },  # dangling: not exported
        ],
    }
    concept_rows, mention_rows, evidence_rows = [], [], []
    for key, (title, type_, description, fragments) in concept_specs.items():
        cid = out.concepts[key]
        spans = []
        for fragment in fragments:
            mid, start, end = find(fragment)
            mention_id = stable_uuid("mention", key, fragment)
            mention_rows.append(
                dict(
                    mention_id=mention_id,
                    segment_id=seg_of[mid],
                    message_id=mid,
                    conversation_id=next(
                        out.conversation_ids[c] for c, ids in out.conversations.items() if mid in ids
                    ),
                    span_start=start,
                    span_end=end,
                    surface=fragment,
                    title=title,
                    type=type_,
                    description=description,
                    aliases=[],
                    relations=[],
                    confidence=0.9,
                    consolidated_id=cid,
                    extractor="test",
                    extracted_at=now,
                    message_created_at=T0,
                )
            )
            evidence_rows.append(
                dict(
                    concept_id=cid,
                    mention_id=mention_id,
                    message_id=mid,
                    segment_id=seg_of[mid],
                    span_start=start,
                    span_end=end,
                    text=fragment,
                    confidence=0.9,
                    status="active",
                )
            )
            spans.append(
                {
                    "source_id": seg_of[mid],
                    "message_id": mid,
                    "text": fragment,
                    "confidence": 0.9,
                    "char_start": start,
                    "char_end": end,
                }
            )
        concept_rows.append(
            dict(
                concept_id=cid,
                title=title,
                type=type_,
                description=description,
                state="active",
                trust="stable",
                confidence=0.8,
                aliases=[fragments[0]],
                evidence_spans=spans,
                relations=relations.get(key, []),
                revision_count=0,
                support_count=len(fragments),
                first_seen=T0,
                last_seen=T0 + timedelta(days=10),
                recorded_at=now,
                merged_into=None,
            )
        )
    out.domain_id = stable_uuid("domain", "home")
    out.anchor_id = stable_uuid("anchor", "balcony")
    out.topics = {"garden": stable_uuid("topic", "garden"), "travel": stable_uuid("topic", "travel")}
    garden_segments = [sid for sid, mids in out.segments.items() if mids[0] in out.conversations["garden"]]
    trip_segments = [sid for sid in out.segments if sid not in garden_segments]
    out.fact_states = {
        "north": stable_uuid("fact", "crop", "tomatoes"),
        "now": stable_uuid("fact", "crop", "lettuce"),
    }
    out.reaction_id = stable_uuid("reaction", "garden")
    mid_north, _, _ = find("faces north")
    mid_switch, _, _ = find("switch the raised beds")
    with store.staging.begin() as conn:
        conn.execute(insert(canonical_concepts), concept_rows)
        conn.execute(insert(mentions), mention_rows)
        conn.execute(insert(concept_evidence), evidence_rows)
        conn.execute(
            insert(domains),
            [
                dict(
                    domain_id=out.domain_id, label="Home", profile="house and garden", size=1, recorded_at=now
                )
            ],
        )
        conn.execute(
            insert(anchor_entities),
            [
                dict(
                    anchor_id=out.anchor_id,
                    domain_id=out.domain_id,
                    concept_id=out.concepts["beds"],
                    label="Balcony",
                    score=0.9,
                    recorded_at=now,
                )
            ],
        )
        conn.execute(
            insert(topics),
            [
                dict(topic_id=out.topics["garden"], label="balcony garden", profile="raised beds, sun, lettuce", keywords=["beds", "sun"],
                     centroid=[0.0] * 4, size=len(garden_segments), silhouette=0.4, label_centroid_distance=0.2,
                     domain_id=out.domain_id, anchor_id=out.anchor_id, first_seen=T0, last_seen=T0, recorded_at=now),
                dict(topic_id=out.topics["travel"], label="kyoto travel", profile="cherry blossoms, ryokan", keywords=["kyoto"],
                     centroid=[0.0] * 4, size=len(trip_segments), silhouette=0.3, label_centroid_distance=0.3,
                     domain_id=out.domain_id, anchor_id=None, first_seen=T0, last_seen=T0, recorded_at=now),
            ],
        )  # fmt: skip
        conn.execute(
            insert(topic_segments),
            [dict(segment_id=s, topic_id=out.topics["garden"], probability=0.9) for s in garden_segments]
            + [dict(segment_id=s, topic_id=out.topics["travel"], probability=0.8) for s in trip_segments],
        )
        conn.execute(
            insert(topic_concept_links),
            [
                dict(
                    topic_id=out.topics["garden"], concept_id=out.concepts["beds"], weight=100.0, cosine=0.7
                ),
                dict(
                    topic_id=out.topics["garden"], concept_id=out.concepts["lettuce"], weight=60.0, cosine=0.5
                ),
                dict(
                    topic_id=out.topics["garden"], concept_id=out.concepts["shade"], weight=35.0, cosine=0.4
                ),
                dict(
                    topic_id=out.topics["travel"], concept_id=out.concepts["kyoto"], weight=100.0, cosine=0.8
                ),
            ],
        )
        conn.execute(
            insert(fact_states),
            [
                dict(fact_state_id=out.fact_states["north"], concept_id=out.concepts["beds"], attribute="crop", value="tomatoes",
                     valid_from=T0, valid_until=T0 + timedelta(minutes=4), recorded_at=now, superseded_at=None,
                     evidence_message_id=mid_north),
                dict(fact_state_id=out.fact_states["now"], concept_id=out.concepts["beds"], attribute="crop", value="lettuce and basil",
                     valid_from=T0 + timedelta(minutes=4), valid_until=None, recorded_at=now, superseded_at=None,
                     evidence_message_id=mid_switch),
            ],
        )  # fmt: skip
        conn.execute(
            insert(gardener_actions),
            [
                dict(gardener_action_id=stable_uuid("gardener", 1), proposal_id=None, action="create_relation",
                     concept_ids=[out.concepts["shade"], out.concepts["lettuce"]], before_state={}, after_state={"relation": "causes"},
                     rationale="the north-facing balcony is why the crops changed", cited_message_ids=[mid_north, mid_switch],
                     dry_run=False, status="applied", run_id="run-1", recorded_at=now),
            ],
        )  # fmt: skip
    with store.reflective.begin() as conn:
        conn.execute(
            insert(user_reactions),
            [
                dict(reaction_id=out.reaction_id, message_id=mid_north, segment_id=seg_of[mid_north],
                     conversation_id=out.conversation_ids["garden"], state="Frustration", state_raw="",
                     intensity=0.4, valence="negative", epistemic_status="inferred", evidence_text="little sun",
                     span_start=45, span_end=55, topic_id=out.topics["garden"], occurred_at=T0, extractor="test", recorded_at=now, expires_at=None),
            ],
        )  # fmt: skip
    return out
