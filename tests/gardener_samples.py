"""A small corpus the gardener has work on: authored messages of two people (Dana, Omar), mentions quoting
them verbatim, and concepts consolidated from those mentions the way the memory loop would (create, then
attach; every decision in the action_log) — written directly, so the test does not depend on router tuning:

- a duplicate pair: "garden planner app" and "Garden Planner App" (one project, split by the extractor);
- a broad concept: "Max" holding Dana's dog *and* Omar's coworker (two evidence clusters, different people);
- a noise concept: "Fri", one weak mention of a weekday;
- a hub: "garden", named across four conversations and by the app's title.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, insert, update

from memory_core.concepts import action_log as log
from memory_core.concepts.patches import apply_patch, concept_from_patch
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.store import evidence_row, insert_concepts
from memory_core.ids import stable_uuid
from memory_core.ingest.loader import ingest_file
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.patches import create_patch, evidence_patch
from memory_core.segments import build_segments
from memory_core.store.db import CorpusStore
from memory_core.store.schema import concept_evidence, mentions
from tests.conftest import write_jsonl
from tests.loop_samples import add_mentions, mention

TURNS = [
    # (id, conversation, author, text, time)
    (
        "d1",
        "c1",
        "dana",
        "My dog Max keeps digging holes in the garden beds every morning.",
        "2024-01-05T09:00:00Z",
    ),
    ("a1", "c1", "assistant", "A digging pit in a corner of the garden can help.", "2024-01-05T09:00:10Z"),
    (
        "d2",
        "c1",
        "dana",
        "I started building a garden planner app in Flutter this week.",
        "2024-01-05T09:05:00Z",
    ),
    ("a2", "c1", "assistant", "Sounds fun, a planner could track planting dates.", "2024-01-05T09:05:10Z"),
    (
        "d3",
        "c2",
        "dana",
        "Update: the Garden Planner App in Flutter now has a planting calendar.",
        "2024-02-10T18:00:00Z",
    ),
    ("a3", "c2", "assistant", "Great progress on the calendar.", "2024-02-10T18:00:10Z"),
    (
        "d4",
        "c2",
        "dana",
        "My dog Max chewed the garden hose again, so dog training starts soon.",
        "2024-02-10T18:05:00Z",
    ),
    ("a4", "c2", "assistant", "Training will help with the chewing.", "2024-02-10T18:05:10Z"),
    ("d5", "c2", "dana", "Hey, see you Fri!", "2024-02-10T18:09:00Z"),
    (
        "o1",
        "c3",
        "omar",
        "My coworker Max reviewed the quarterly budget report at the office today.",
        "2024-03-01T10:00:00Z",
    ),
    ("a5", "c3", "assistant", "Good to have a careful reviewer.", "2024-03-01T10:00:10Z"),
    (
        "o2",
        "c3",
        "omar",
        "Max from accounting scheduled the budget meeting at the office for Monday.",
        "2024-03-01T10:05:00Z",
    ),
    ("a6", "c3", "assistant", "Hope the budget meeting goes well.", "2024-03-01T10:05:10Z"),
    (
        "d6",
        "c4",
        "dana",
        "The garden finally has tomatoes and the garden path is done.",
        "2024-04-02T08:00:00Z",
    ),
    ("a7", "c4", "assistant", "Congratulations on the tomatoes.", "2024-04-02T08:00:10Z"),
]

MENTIONS = [
    mention("d1", "Max", "Max", "entity", "Dana's dog Max digs holes in the garden beds every morning", 0.8),
    mention("d1", "garden", "garden", "entity", "Dana's garden with beds the dog digs up", 0.7),
    mention(
        "d2",
        "garden planner app",
        "garden planner app",
        "project",
        "Dana's garden planner app built in Flutter",
        0.85,
    ),
    mention(
        "d3",
        "Garden Planner App",
        "Garden Planner App",
        "project",
        "Dana's garden planner app in Flutter with a planting calendar",
        0.85,
    ),
    mention(
        "d3",
        "planting calendar",
        "planting calendar",
        "entity",
        "the calendar feature of the planner app",
        0.6,
    ),
    mention(
        "d4", "Max", "Max", "entity", "Dana's dog Max chewed the garden hose; dog training starts soon", 0.8
    ),
    mention("d4", "garden", "garden", "entity", "Dana's garden where the dog chewed the hose", 0.6),
    mention("d5", "Fri", "Fri", "entity", "a day Dana will see someone", 0.5),
    mention(
        "o1",
        "Max",
        "Max",
        "entity",
        "Omar's coworker Max reviewed the quarterly budget report at the office",
        0.8,
    ),
    mention(
        "o2",
        "Max",
        "Max",
        "entity",
        "Omar's coworker Max from accounting scheduled the budget meeting at the office",
        0.8,
    ),
    mention("d6", "garden", "garden", "entity", "Dana's garden has tomatoes and a finished garden path", 0.8),
]

# concept -> its mentions (by position in MENTIONS), in the order the loop would have seen them
CONCEPTS = {
    "max": [0, 5, 8, 9],
    "garden": [1, 6, 10],
    "app": [2],
    "app_duplicate": [3],
    "calendar": [4],
    "fri": [7],
}


def jsonl_rows() -> list[dict]:
    rows, prev = [], {}
    for mid, conv, author, text, t in TURNS:
        row = {
            "id": mid,
            "conversation_id": conv,
            "role": "assistant" if author == "assistant" else "user",
            "author": author,
            "text": text,
            "created_at": t,
        }
        if conv in prev:
            row["parent_id"] = prev[conv]
        prev[conv] = mid
        rows.append(row)
    return rows


def build_gardener_corpus(store: CorpusStore, tmp_path) -> dict[str, str]:
    """Ingest, segment, write the mentions and consolidate them; returns {concept key: concept id}."""
    ingest_file(store, write_jsonl(tmp_path / f"{store.name}.jsonl", jsonl_rows()), "jsonl")
    build_segments(store)
    mention_ids = add_mentions(store, MENTIONS)
    return seed_concepts(store, {k: [mention_ids[i] for i in idx] for k, idx in CONCEPTS.items()})


def seed_concepts(store: CorpusStore, groups: dict[str, list[str]]) -> dict[str, str]:
    """Consolidate each group of mentions into one concept with the memory loop's own patches (create, then
    attach), logging every decision, linking the mentions."""
    policy = ConceptPolicy()
    now = datetime(2024, 5, 1)
    with store.staging.connect() as conn:
        rows = {r.mention_id: Candidate.from_row(r) for r in conn.execute(mentions.select())}
    ids, records, concepts, evidence, links = {}, [], [], [], []
    for key, group in groups.items():
        first = rows[group[0]]
        cid = stable_uuid("concept", store.name, first.mention_id)
        ids[key] = cid
        patch = create_patch(cid, first, policy, now)
        concept, spans = concept_from_patch(patch)
        records.append(_record("create", cid, first, None, patch, now))
        for mention_id in group[1:]:
            cand = rows[mention_id]
            prior, new = evidence_patch(concept, cand, policy, now, duplicate=False)
            spans += apply_patch(concept, new)
            records.append(_record("attach", cid, cand, prior, new, now))
        concepts.append(concept)
        for mention_id, span in zip(group, spans, strict=True):
            evidence.append(evidence_row(cid, mention_id, span))
            links.append({"b_mention_id": mention_id, "b_concept_id": cid})
    with store.staging.begin() as conn:
        insert_concepts(conn, concepts)
        conn.execute(insert(concept_evidence), evidence)
        conn.execute(
            update(mentions)
            .where(mentions.c.mention_id == bindparam("b_mention_id"))
            .values(consolidated_id=bindparam("b_concept_id")),
            links,
        )
        log.append(conn, records)
    return ids


def _record(action, cid, cand, prior, new, now) -> log.ActionRecord:
    return log.ActionRecord(
        action=action,
        actor="memory_loop",
        concept_id=cid,
        mention_id=cand.mention_id,
        scores={},
        rationale=f"test corpus: {action}",
        cited_message_ids=[cand.message_id],
        prior_state=prior,
        new_state=new,
        run_id="seed",
        recorded_at=now,
    )
