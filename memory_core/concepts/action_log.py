"""The ActionLog: append-only record of every cognitive operation on concepts, and its replay.

A record holds the action, the actor, the candidate (mention id), the concept, the scores, the rationale,
the cited message ids, the prior state of the changed fields (so any action can be rolled back), the new
state as a patch (see `patches.py`), the run id and the time. The log only ever grows: this module inserts
and reads, and on SQLite a trigger refuses UPDATE and DELETE (see the schema).

Replay: applying the patches of create / attach / refine / relate in `action_id` order to an empty store
rebuilds `canonical_concepts` and `concept_evidence` exactly (`replay_concepts`, `rebuild_from_log`).

The gardener (actor "gardener") logs one row per concept an action touches, with the concept's whole row as
the patch: merge / split / archive / refine / relate, and rollback. A patch holding `evidence_rows` replaces
the concept's evidence (a merge moves evidence away from the merged concept; a split hands it to new
concepts); a row with no prior state creates the concept (a split's new concepts); a rollback row with no
new state removes a concept the rolled-back action had created. So replay still reproduces both tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Text, case, cast, insert, select

from memory_core.concepts.patches import (
    EVIDENCE_ROWS,
    apply_patch,
    concept_from_patch,
    from_json_state,
    to_json_state,
)
from memory_core.concepts.store import (
    concept_to_row,
    evidence_row,
    insert_concepts,
    read_concepts,
)
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.store.schema import action_log, canonical_concepts, concept_evidence

# invalidate / dispute / repair: the revision layer's changes (a source changed, a fact contradicted, a
# repair worker's action), stated as patches like the others
CONCEPT_ACTIONS = (
    "create", "attach", "refine", "relate", "merge", "split", "archive", "rollback", "invalidate", "dispute", "repair",
)  # fmt: skip


@dataclass
class ActionRecord:
    action: str
    actor: str
    concept_id: str | None
    mention_id: str | None
    scores: dict
    rationale: str
    cited_message_ids: list[str]
    prior_state: dict | None
    new_state: dict | None
    run_id: str
    recorded_at: datetime

    @classmethod
    def whole_row(
        cls,
        action: str,
        actor: str,
        concept_id: str,
        prior_state: dict | None,
        new_state: dict | None,
        rationale: str,
        cited_message_ids: list[str],
        run_id: str,
        recorded_at: datetime,
        scores: dict | None = None,
    ) -> ActionRecord:
        """A row of an action on a whole concept (no mention): the concept's rows before and after."""
        return cls(
            action, actor, concept_id, None, scores or {}, rationale, cited_message_ids, prior_state,
            new_state, run_id, recorded_at,
        )  # fmt: skip

    def row(self) -> dict:
        return {
            "action": self.action,
            "actor": self.actor,
            "concept_id": self.concept_id,
            "mention_id": self.mention_id,
            "scores": self.scores,
            "rationale": self.rationale,
            "cited_message_ids": self.cited_message_ids,
            "prior_state": to_json_state(self.prior_state),
            "new_state": to_json_state(self.new_state),
            "run_id": self.run_id,
            "recorded_at": self.recorded_at,
        }


def append(conn: Connection, records: Iterable[ActionRecord]) -> int:
    rows = [r.row() for r in records]
    if rows:
        conn.execute(insert(action_log), rows)
    return len(rows)


# what a replay reads of a log row: of its JSON only the new state (a row's prior state, as large, is only
# asked whether it is there; its scores and citations not at all): decoding every JSON column was a third
# of the log-replay check
REPLAY_COLUMNS = (
    action_log.c.action_id,
    action_log.c.action,
    action_log.c.concept_id,
    action_log.c.mention_id,
    action_log.c.new_state,
    # a JSON column holds Python's None as JSON null: neither that nor SQL NULL is a prior state
    case(
        (action_log.c.prior_state.is_(None), False), else_=cast(action_log.c.prior_state, Text) != "null"
    ).label("has_prior_state"),
)


def read(
    conn: Connection, actor: str | None = None, batch: int = 5000, columns: Sequence | None = None
) -> Iterator[dict]:
    """Log rows in order (every column, or `columns`), streamed in pages."""
    last = 0
    while True:
        query = (
            select(*(columns or action_log.c))
            .where(action_log.c.action_id > last)
            .order_by(action_log.c.action_id)
            .limit(batch)
        )
        if actor:
            query = query.where(action_log.c.actor == actor)
        result = conn.execute(query)
        keys = list(result.keys())  # once per page: a RowMapping builds its keys for every row
        rows = [dict(zip(keys, r, strict=True)) for r in result]
        if not rows:
            return
        yield from rows
        last = rows[-1]["action_id"]


def replay_concepts(rows: Iterable[dict]) -> tuple[dict[str, ConceptHypothesis], list[dict]]:
    """Concepts and evidence rows rebuilt from log rows (their `REPLAY_COLUMNS`, or every column), in
    order."""
    concepts: dict[str, ConceptHypothesis] = {}
    evidence: dict[str, list[dict]] = {}
    for row in rows:
        if row["action"] not in CONCEPT_ACTIONS:
            continue
        cid = row["concept_id"]
        patch = from_json_state(row["new_state"])
        if patch is None:
            if row["action"] != "rollback" or cid not in concepts:
                raise ValueError(f"action {row['action_id']}: {row['action']} without a new state for {cid}")
            concepts.pop(cid)  # a rollback removing a concept the rolled-back action had created
            evidence.pop(cid, None)
            continue
        if row["action"] == "create" and cid in concepts:
            raise ValueError(f"action {row['action_id']}: concept {cid} created twice")
        if cid in concepts:
            spans = apply_patch(concepts[cid], patch)
        elif row["has_prior_state"] if "has_prior_state" in row else row["prior_state"] is not None:
            raise ValueError(f"action {row['action_id']}: {row['action']} of unknown concept {cid}")
        else:
            concepts[cid], spans = concept_from_patch(patch)
        rows_set = patch.get(EVIDENCE_ROWS)
        if rows_set is not None:
            evidence[cid] = [{"concept_id": cid, **r} for r in rows_set]
        else:
            evidence.setdefault(cid, []).extend(evidence_row(cid, row["mention_id"], s) for s in spans)
    return concepts, [r for cid in concepts for r in evidence.get(cid, [])]


def replay_differences(conn: Connection) -> dict:
    """Replay the whole log and compare with the stored tables: the ids of concepts whose row differs and
    whether the evidence rows (as a multiset) agree."""
    replayed, replayed_evidence = replay_concepts(read(conn, columns=REPLAY_COLUMNS))
    stored = read_concepts(conn)

    def _row(concept: ConceptHypothesis | None) -> dict | None:
        return None if concept is None else concept_to_row(concept)

    differing = sorted(
        cid for cid in set(stored) | set(replayed) if _row(stored.get(cid)) != _row(replayed.get(cid))
    )
    # the evidence rows as multisets, counted, not sorted (the check grew faster than the log it reads)
    stored_evidence = Counter(tuple(map(str, r)) for r in conn.execute(select(*concept_evidence.c)))
    names = [c.name for c in concept_evidence.c]
    replayed_counts = Counter(tuple(str(r[n]) for n in names) for r in replayed_evidence)
    return {
        "concepts": len(stored),
        "replayed": len(replayed),
        "differing": differing,
        "evidence_rows": stored_evidence.total(),
        "evidence_equal": stored_evidence == replayed_counts,
    }


def rebuild_from_log(source: Connection, target: Connection) -> tuple[int, int]:
    """Replay `source`'s log into `target`'s (empty) canonical_concepts and concept_evidence."""
    concepts, evidence = replay_concepts(read(source, columns=REPLAY_COLUMNS))
    if target.execute(select(canonical_concepts.c.concept_id).limit(1)).first() is not None:
        raise ValueError("rebuild_from_log needs an empty canonical_concepts table")
    insert_concepts(target, concepts.values())
    if evidence:
        target.execute(insert(concept_evidence), evidence)
    return len(concepts), len(evidence)
