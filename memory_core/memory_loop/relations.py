"""Relations between concepts the memory loop writes at a run's end: the typed relations an extractor
proposed (by the target's title), and the `about` relations it derives itself — a fact is about the people,
things and themes whose concepts hold evidence inside the fact's own evidence (the name "Priya" in "My sister
Priya is getting married", the hub "Caroline" cited by "I went to a support group", the theme "camping" by
"We went camping last week"). Derived from evidence, `about` needs nothing of a teacher but its spans: the
offline teacher's hubs and an LLM's names give it alike. Each change is one `relate` row of the action log.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Text, cast, select

from memory_core.concepts import action_log as log
from memory_core.concepts.patches import apply_patch
from memory_core.memory_loop.apply import ACTOR, Batch, flush
from memory_core.memory_loop.memory import LoopMemory
from memory_core.ontology.concepts import FACT_TYPES, LIVE_STATES, NAME_TYPES, RELATION_TYPES
from memory_core.store.db import utcnow
from memory_core.store.schema import mentions

ABOUT_CONFIDENCE = 0.8


def resolve_relations(mem: LoopMemory, run_id: str) -> None:
    """Typed relations the extractor proposed (by target title), once their targets exist as concepts."""
    index = mem.index
    added: dict[str, dict[tuple[str, str], float]] = {}
    cited: dict[str, list[str]] = {}
    with mem.store.staging.connect() as conn:
        rows = conn.execute(
            select(mentions.c.consolidated_id, mentions.c.message_id, mentions.c.relations).where(
                mentions.c.consolidated_id.is_not(None), cast(mentions.c.relations, Text) != "[]"
            )
        ).all()
    for cid, message_id, relations in rows:
        if cid not in mem.concepts:
            continue
        current = {(r.target_id, r.relation): r.confidence for r in mem.concepts[cid].relations}
        for rel in relations or []:
            if rel.get("relation") not in RELATION_TYPES:
                continue
            targets = sorted(
                index.concepts_named(rel.get("target_title", "")) - {cid},
                key=lambda t: (-mem.concepts[t].support_count, t),
            )
            if not targets:
                continue
            key = (targets[0], rel["relation"])
            conf = round(float(rel.get("confidence", 0.0)), 4)
            have = added.get(cid, {}).get(key, current.get(key))
            if have is None or conf > have:
                added.setdefault(cid, {})[key] = conf
                cited.setdefault(cid, []).append(message_id)
    _write(
        mem,
        run_id,
        added,
        cited,
        "typed relations proposed by the extractor, targets resolved by exact title/alias",
    )


def derive_about(mem: LoopMemory, run_id: str) -> None:
    """`about` from each live fact to the live names and hubs whose evidence lies inside its evidence."""
    spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)  # message → (start, end, name concept)
    for cid, concept in mem.concepts.items():
        if concept.type in NAME_TYPES and concept.state in LIVE_STATES:
            for e in concept.evidence_spans:
                spans[e.message_id].append((e.char_start, e.char_end, cid))
    added: dict[str, dict[tuple[str, str], float]] = {}
    cited: dict[str, list[str]] = {}
    for cid, concept in mem.concepts.items():
        if concept.type not in FACT_TYPES or concept.state not in LIVE_STATES:
            continue
        current = {(r.target_id, r.relation) for r in concept.relations}
        for e in concept.evidence_spans:
            for start, end, target in spans.get(e.message_id, ()):
                if e.char_start <= start and end <= e.char_end and (target, "about") not in current:
                    added.setdefault(cid, {})[(target, "about")] = ABOUT_CONFIDENCE
                    cited.setdefault(cid, []).append(e.message_id)
    _write(mem, run_id, added, cited, "about: names and hubs whose evidence lies inside the fact's evidence")


def _write(
    mem: LoopMemory,
    run_id: str,
    added: dict[str, dict[tuple[str, str], float]],
    cited: dict[str, list[str]],
    why: str,
) -> None:
    if not added:
        return
    batch = Batch()
    now = utcnow()
    for cid in sorted(added):
        concept = mem.concepts[cid]
        merged = {(r.target_id, r.relation): r.confidence for r in concept.relations}
        merged.update(added[cid])
        relations = [
            {"target_id": t, "relation": rel, "confidence": c} for (t, rel), c in sorted(merged.items())
        ]
        prior = {"relations": [r.model_dump() for r in concept.relations], "recorded_at": concept.recorded_at}
        patch = {"relations": relations, "recorded_at": now}
        apply_patch(concept, patch)
        batch.changed.add(cid)
        mem.report.relations_added += len(added[cid])
        rationale = f"{why}: " + ", ".join(
            f"{rel} → {mem.concepts[t].title}" for (t, rel) in sorted(added[cid])
        )
        batch.records.append(
            log.ActionRecord(
                action="relate",
                actor=ACTOR,
                concept_id=cid,
                mention_id=None,
                scores={"relations": len(added[cid])},
                rationale=rationale,
                cited_message_ids=sorted(set(cited[cid])),
                prior_state=prior,
                new_state=patch,
                run_id=run_id,
                recorded_at=now,
            )
        )
    mem.report.actions["relate"] += len(batch.records)
    flush(mem, batch)
