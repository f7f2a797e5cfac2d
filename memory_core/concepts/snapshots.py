"""Concept state as the stages that change whole concepts read, change, audit and restore it (the
gardener's Phase 1, the revision layer's repair worker).

A *snapshot* of a set of concepts is JSON: each concept's whole `canonical_concepts` row (a
`ConceptHypothesis` as JSON, None when the concept does not exist), its `concept_evidence` rows and the
mentions linked to it (`consolidated_id`).
An action is a pair of snapshots (before, after) of the concepts it touches; applying writes `after`,
rolling back writes `before`. Both are kept by the stage (`gardener_actions`; the action log's own prior
and new states) so any action can be audited and undone exactly, and each write also appends one
`action_log` row per touched concept (see `memory_core/concepts/action_log.py` for how replay reads them).

`Workspace` holds the touched concepts in memory: a run plans every action against it (a dry-run never
writes), and a real run writes each action in its own transaction as soon as it is planned.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Connection, Text, bindparam, cast, select, update

from memory_core.concepts import action_log as log
from memory_core.concepts.patches import EVIDENCE_ROWS
from memory_core.concepts.store import (
    concept_from_json,
    concept_to_json,
    concept_to_row,
    delete_concepts,
    insert_concepts,
    read_concepts,
    read_evidence,
    replace_evidence,
    update_concepts,
)
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, concept_evidence, mentions

_CHUNK = 500


def _evidence_sort_key(row: dict) -> tuple:
    return (row["mention_id"], row["message_id"], row["span_start"], row["span_end"])


def normalise_snapshot(snapshot: dict) -> dict:
    """Evidence rows in one canonical order, so snapshots compare equal whatever built them."""
    snapshot["evidence"] = {
        c: sorted(rows, key=_evidence_sort_key) for c, rows in snapshot["evidence"].items()
    }
    return snapshot


class Workspace:
    """The concepts a run touches, read from the store on first use and changed in memory."""

    def __init__(self, store: CorpusStore):
        self.store = store
        self._concepts: dict[str, ConceptHypothesis | None] = {}
        self._evidence: dict[str, list[dict]] = {}
        self._links: dict[str, list[str]] = {}  # concept -> linked mention ids
        self._incoming: dict[str, set[str]] | None = None

    # reading ------------------------------------------------------------------------------------------
    def _load(self, ids: Iterable[str]) -> None:
        missing = [c for c in dict.fromkeys(ids) if c not in self._concepts]
        if not missing:
            return
        with self.store.staging.connect() as conn:
            rows = read_concepts(conn, missing)
            evidence = read_evidence(conn, missing)
            links: dict[str, list[str]] = {c: [] for c in missing}
            for i in range(0, len(missing), _CHUNK):
                for mention_id, cid in conn.execute(
                    select(mentions.c.mention_id, mentions.c.consolidated_id).where(
                        mentions.c.consolidated_id.in_(missing[i : i + _CHUNK])
                    )
                ):
                    links[cid].append(mention_id)
        for cid in missing:
            self._concepts[cid] = rows.get(cid)
            self._evidence[cid] = sorted(evidence[cid], key=_evidence_sort_key)
            self._links[cid] = sorted(links[cid])

    def preload(self, ids: Iterable[str]) -> None:
        """Read these concepts (those not read yet) in one go, before a loop that looks at each."""
        self._load(sorted(ids))

    def concept(self, cid: str) -> ConceptHypothesis | None:
        """The concept as this workspace sees it (a copy the caller may change)."""
        self._load([cid])
        concept = self._concepts[cid]
        return concept.model_copy(deep=True) if concept is not None else None

    def evidence(self, cid: str) -> list[dict]:
        self._load([cid])
        return copy.deepcopy(self._evidence[cid])

    def linked_mentions(self, cid: str) -> list[str]:
        self._load([cid])
        return list(self._links[cid])

    def incoming_relations(self, cid: str) -> list[str]:
        """Concepts (live or not) with a typed relation pointing at `cid`."""
        if self._incoming is None:
            self._incoming = {}
            with self.store.staging.connect() as conn:
                for source, relations in conn.execute(
                    select(canonical_concepts.c.concept_id, canonical_concepts.c.relations).where(
                        cast(canonical_concepts.c.relations, Text) != "[]"
                    )
                ):
                    for rel in relations or []:
                        self._incoming.setdefault(rel["target_id"], set()).add(source)
        return sorted(self._incoming.get(cid, set()))

    def holders(self, message_ids: Iterable[str]) -> dict[str, set[str]]:
        """message -> concepts holding evidence in it, as this workspace sees them (evidence moved by the
        run's planned actions included, so a dry run answers like the real run would)."""
        wanted = sorted(set(message_ids))
        out: dict[str, set[str]] = {m: set() for m in wanted}
        with self.store.staging.connect() as conn:
            for i in range(0, len(wanted), _CHUNK):
                for message_id, cid in conn.execute(
                    select(concept_evidence.c.message_id, concept_evidence.c.concept_id).where(
                        concept_evidence.c.message_id.in_(wanted[i : i + _CHUNK])
                    )
                ):
                    if cid not in self._concepts:  # untouched by this run: the store is right
                        out[message_id].add(cid)
        for cid, rows in self._evidence.items():
            for r in rows:
                if r["message_id"] in out:
                    out[r["message_id"]].add(cid)
        return out

    def snapshot(self, ids: Iterable[str]) -> dict:
        ids = list(dict.fromkeys(ids))
        self._load(ids)
        return {
            "concepts": {c: concept_to_json(self._concepts[c]) for c in ids},
            "evidence": {c: copy.deepcopy(self._evidence[c]) for c in ids},
            "mention_links": {m: c for c in ids for m in self._links[c]},
        }

    # changing -----------------------------------------------------------------------------------------
    def put(self, after: dict) -> None:
        """Make `after` (a snapshot) the workspace's state of its concepts."""
        self._load(after["concepts"])
        for cid, row in after["concepts"].items():
            old = self._concepts.get(cid)
            new = concept_from_json(row)
            self._concepts[cid] = new
            self._evidence[cid] = sorted(
                copy.deepcopy(after["evidence"].get(cid, [])), key=_evidence_sort_key
            )
            if self._incoming is not None:
                for rel in old.relations if old is not None else []:
                    self._incoming.get(rel.target_id, set()).discard(cid)
                for rel in new.relations if new is not None else []:
                    self._incoming.setdefault(rel.target_id, set()).add(cid)
        # an action moves mentions only between the concepts it touches, so `after` lists every one of them
        for cid in after["concepts"]:
            self._links[cid] = sorted(m for m, c in after["mention_links"].items() if c == cid)


def current_snapshot(store: CorpusStore, ids: Iterable[str]) -> dict:
    """The stored state of `ids` (a fresh read)."""
    return Workspace(store).snapshot(ids)


def write_state(conn: Connection, before: dict, after: dict) -> None:
    """Make the store hold `after` for its concepts (and its mention links), given it holds `before`."""
    removed, changed, created = [], [], []
    for cid, row in after["concepts"].items():
        existed = before["concepts"].get(cid) is not None
        concept = concept_from_json(row)
        if concept is None:
            if existed:
                removed.append(cid)
        else:
            (changed if existed else created).append(concept)
    delete_concepts(conn, removed)
    update_concepts(conn, changed)
    insert_concepts(conn, created)
    for cid in after["concepts"]:
        if before["evidence"].get(cid, []) != after["evidence"].get(cid, []):
            replace_evidence(conn, cid, after["evidence"].get(cid, []))
    links = [
        {"b_mention_id": m, "b_concept_id": c}
        for m, c in after["mention_links"].items()
        if before["mention_links"].get(m) != c
    ]
    if links:
        conn.execute(
            update(mentions)
            .where(mentions.c.mention_id == bindparam("b_mention_id"))
            .values(consolidated_id=bindparam("b_concept_id")),
            links,
        )


def log_records(
    action: str,
    before: dict,
    after: dict,
    rationale: str,
    cited: list[str],
    scores: dict,
    run_id: str,
    now: datetime,
    *,
    actor: str,
) -> list[log.ActionRecord]:
    """One append-only action_log row per touched concept: whole rows as patches, evidence rows when the
    action changed them (replay then replaces that concept's evidence)."""
    records = []
    for cid, new_row in after["concepts"].items():
        old_row = before["concepts"].get(cid)
        if old_row == new_row and before["evidence"].get(cid) == after["evidence"].get(cid):
            continue
        evidence_changed = before["evidence"].get(cid, []) != after["evidence"].get(cid, [])
        prior = _row_patch(old_row)
        new = _row_patch(new_row)
        if evidence_changed:
            if prior is not None:
                prior[EVIDENCE_ROWS] = before["evidence"].get(cid, [])
            if new is not None:
                new[EVIDENCE_ROWS] = after["evidence"].get(cid, [])
        records.append(
            log.ActionRecord(
                action=action,
                actor=actor,
                concept_id=cid,
                mention_id=None,
                scores=scores,
                rationale=rationale,
                cited_message_ids=cited,
                prior_state=prior,
                new_state=new,
                run_id=run_id,
                recorded_at=now,
            )
        )
    return records


def _row_patch(row: dict | None) -> dict | None:
    """A whole concept row as an ActionLog patch (a copy, times as datetimes)."""
    concept = concept_from_json(row)
    return None if concept is None else concept_to_row(concept)


def changed_concepts(before: dict, after: dict) -> list[str]:
    """Concepts whose row or evidence differ between two snapshots of the same ids."""
    return [
        cid
        for cid in after["concepts"]
        if before["concepts"].get(cid) != after["concepts"].get(cid)
        or before["evidence"].get(cid) != after["evidence"].get(cid)
    ]
