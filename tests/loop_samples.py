"""A small real-shaped corpus for the memory loop: three conversations of one user over three months, and
the mentions a Semantic Mapper would write for them (authored here, spans found verbatim in the text)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import insert, select

from memory_core.ids import stable_uuid
from memory_core.ingest.loader import ingest_file
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.segments import build_segments
from memory_core.store.db import CorpusStore
from memory_core.store.schema import mentions, messages, segments
from tests.conftest import write_jsonl

TURNS = [
    # (id, conversation, role, text, time)
    (
        "m1",
        "c1",
        "user",
        "I started building a garden planner app in Flutter this week.",
        "2024-01-05T09:00:00Z",
    ),
    (
        "m2",
        "c1",
        "assistant",
        "Nice! A garden planner app could track planting dates and watering.",
        "2024-01-05T09:00:10Z",
    ),
    (
        "m3",
        "c1",
        "user",
        "My dog Max keeps digging up the tomato beds, so the app needs a pest log too.",
        "2024-01-05T09:02:00Z",
    ),
    (
        "m4",
        "c1",
        "assistant",
        "Max sounds energetic. A pest log with photos would help.",
        "2024-01-05T09:02:10Z",
    ),
    (
        "m5",
        "c2",
        "user",
        "Update on the garden planner app: the planting calendar works now.",
        "2024-02-10T18:00:00Z",
    ),
    (
        "m6",
        "c2",
        "assistant",
        "Great progress. Next could be reminders for watering.",
        "2024-02-10T18:00:10Z",
    ),
    (
        "m7",
        "c2",
        "user",
        "I signed up for the Berlin marathon in September and I'm training four days a week.",
        "2024-02-10T18:05:00Z",
    ),
    (
        "m8",
        "c2",
        "assistant",
        "Four days a week is a solid plan for the Berlin marathon.",
        "2024-02-10T18:05:10Z",
    ),
    (
        "m9",
        "c3",
        "user",
        "Max ate my running shoes, so training paused for two days.",
        "2024-03-15T07:30:00Z",
    ),
    (
        "m10",
        "c3",
        "assistant",
        "Sorry about the shoes! Rest days are fine for marathon prep.",
        "2024-03-15T07:30:10Z",
    ),
    (
        "m11",
        "c3",
        "user",
        "I always procrastinate on the garden app when work gets stressful. The tomato beds need compost.",
        "2024-03-15T07:40:00Z",
    ),
    ("m12", "c3", "assistant", "Small daily tasks can help with procrastination.", "2024-03-15T07:40:10Z"),
]


def jsonl_rows(turns=None) -> list[dict]:
    rows, prev = [], {}
    for mid, conv, role, text, t in turns or TURNS:
        row = {
            "id": mid,
            "conversation_id": conv,
            "role": role,
            "author": "dana" if role == "user" else "assistant",
            "text": text,
            "created_at": t,
        }
        if conv in prev:
            row["parent_id"] = prev[conv]
        prev[conv] = mid
        rows.append(row)
    return rows


def mention(ref, surface, title, type_, description, confidence, aliases=(), relations=()):
    return dict(
        ref=ref,
        surface=surface,
        title=title,
        type=type_,
        description=description,
        confidence=confidence,
        aliases=list(aliases),
        relations=list(relations),
    )


# In chronological order of their messages; the comment says what the loop should do with each.
MENTIONS = [
    mention(
        "m1",
        "garden planner app",
        "garden planner app",
        "project",
        "Garden planner app is Dana's app for planning a garden, built in Flutter.",
        0.85,
    ),  # create
    mention(
        "m1",
        "Flutter",
        "Flutter",
        "entity",
        "Flutter is the UI framework Dana builds the garden app with.",
        0.6,
    ),  # create
    mention(
        "m2",
        "garden planner app",
        "Garden planner app",
        "project",
        "an app tracking planting dates and watering",
        0.5,
    ),  # attach (shared title)
    mention(
        "m3",
        "Max",
        "Max",
        "entity",
        "Max is Dana's dog.",
        0.8,
        relations=[{"target_title": "tomato beds", "relation": "conflicts_with", "confidence": 0.6}],
    ),  # create
    mention("m3", "tomato beds", "tomato beds", "entity", "beds", 0.4),  # create (weak)
    mention("m3", "digging", "it", "entity", "something Max does", 0.5),  # reject: generic title
    mention("m4", "pest log", "pest log", "project", "a log of pests", 0.1),  # reject: low confidence
    mention(
        "m5",
        "garden planner app",
        "garden planner app",
        "project",
        "Dana's Flutter garden planner app; the planting calendar works",
        0.9,
        aliases=["garden app"],
    ),  # attach
    mention(
        "m7",
        "I signed up for the Berlin marathon in September",
        "Dana signed up for the Berlin marathon",
        "goal",
        "Dana signed up for the Berlin marathon in September 2024 and is training four days a week.",
        0.9,
    ),  # create (a fact: short title, the whole fact with its date in the description)
    mention(
        "m8",
        "Berlin marathon",
        "Dana signed up for the Berlin marathon",
        "event",
        "Dana runs the Berlin marathon in September 2024.",
        0.6,
    ),  # create: event is not compatible with goal, however alike
    mention("m9", "Max", "Max", "entity", "Dana's dog who ate the running shoes", 0.8),  # attach
    mention(
        "m9",
        "running shoes",
        "sneakers",
        "entity",
        "shoes Dana runs in",
        0.7,
    ),  # reject: span_unverified (surface moved below)
    mention(
        "m11",
        "I always procrastinate on the garden app when work gets stressful",
        "Dana procrastinates on the garden app",
        "behavioral_pattern",
        "Dana always procrastinates on the garden app when work gets stressful.",
        0.75,
        relations=[{"target_title": "garden app", "relation": "conflicts_with", "confidence": 0.7}],
    ),  # create + relation
    mention(
        "m11",
        "tomato beds",
        "tomato beds",
        "entity",
        "Dana's vegetable beds with tomatoes; they need compost and Max digs them up",
        0.8,
    ),  # refine the weak one
    mention("m12", "procrastination", "procrastination", "emotion", "a feeling", 0.6),  # reject: unknown type
]


def concept(
    concept_id: str = "k1",
    title: str = "Max",
    type_: str = "entity",
    description: str = "Dana's dog",
    state: str = "active",
    aliases: list[str] | None = None,
    first_seen: datetime = datetime(2024, 1, 5, 9, 0),
    last_seen: datetime | None = None,
) -> ConceptHypothesis:
    """A stored concept as the router meets it (one piece of evidence, no relations)."""
    return ConceptHypothesis(
        concept_id=concept_id,
        title=title,
        type=type_,
        description=description,
        state=state,
        trust="stable",
        confidence=0.6,
        aliases=list(aliases or []),
        evidence_spans=[],
        relations=[],
        revision_count=0,
        support_count=1,
        first_seen=first_seen,
        last_seen=last_seen or first_seen,
        recorded_at=first_seen,
        merged_into="",
    )


def build_corpus(store: CorpusStore, tmp_path, turns=None, specs=None) -> None:
    """Ingest the turns and cut segments (the foundation's code), then write the authored mentions."""
    path = write_jsonl(tmp_path / f"{store.name}.jsonl", jsonl_rows(turns))
    ingest_file(store, path, "jsonl")
    build_segments(store)
    add_mentions(store, MENTIONS if specs is None else specs)


def add_mentions(store: CorpusStore, specs: list[dict], extractor: str = "test-author") -> list[str]:
    with store.source.connect() as conn:
        msgs = {
            r.source_ref: r
            for r in conn.execute(
                select(
                    messages.c.message_id,
                    messages.c.conversation_id,
                    messages.c.source_ref,
                    messages.c.text,
                    messages.c.created_at,
                )
            )
        }
    with store.staging.connect() as conn:
        seg_of = {}
        for seg in conn.execute(
            select(segments.c.segment_id, segments.c.message_ids).where(segments.c.superseded_at.is_(None))
        ):
            for mid in seg.message_ids:
                seg_of[mid] = seg.segment_id
    rows = []
    for spec in specs:
        msg = msgs[spec["ref"]]
        start = msg.text.find(spec["surface"])
        if spec["surface"] == "running shoes":
            start += (
                1  # a span that does not verify (the mapper would never write it; the loop must catch it)
            )
        assert start >= 0, spec
        rows.append(
            dict(
                mention_id=stable_uuid("mention", msg.message_id, spec["title"], start),
                segment_id=seg_of[msg.message_id],
                message_id=msg.message_id,
                conversation_id=msg.conversation_id,
                span_start=start,
                span_end=start + len(spec["surface"]),
                surface=spec["surface"],
                title=spec["title"],
                type=spec["type"],
                description=spec["description"],
                aliases=spec["aliases"],
                relations=spec["relations"],
                confidence=spec["confidence"],
                consolidated_id=None,
                extractor=extractor,
                extracted_at=datetime(2024, 4, 1),
                message_created_at=msg.created_at,
            )
        )
    with store.staging.begin() as conn:
        conn.execute(insert(mentions), rows)
    return [r["mention_id"] for r in rows]
