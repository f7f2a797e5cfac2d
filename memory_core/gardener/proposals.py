"""`lifecycle_proposals`: the pending_review staging area Phase 0 writes and Phase 1 works through, and its
lifecycle.

Ids are deterministic (category + concept ids), so rerunning triage over the same state changes nothing:
a pending proposal is updated only when its content changed; one no longer proposed becomes `stale`;
one a Phase 1 run already decided (`applied`, `rejected`, `rolled_back`) is left as it is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select, update

from memory_core.gardener.errors import GardenerError
from memory_core.ids import stable_uuid
from memory_core.ontology.lifecycle import LifecycleProposal
from memory_core.store.db import CorpusStore
from memory_core.store.schema import lifecycle_proposals

CATEGORIES = ("merge", "split", "macro_concept", "noise")
PENDING = "pending_review"
CONTENT_FIELDS = ("category", "concept_ids", "score", "rationale", "cited_message_ids", "proposer", "payload")


@dataclass
class ScoredProposal:
    category: str
    concept_ids: list[str]  # merge: the canonical concept first
    score: float
    rationale: str
    cited_message_ids: list[str]
    payload: dict = field(default_factory=dict)
    proposer: str = "offline"

    def proposal_id(self, corpus: str) -> str:
        """Deterministic: the same category over the same concepts is the same proposal on every run."""
        return stable_uuid("lifecycle_proposal", corpus, self.category, *sorted(self.concept_ids))

    def as_model(self) -> LifecycleProposal:
        return LifecycleProposal(
            category=self.category,
            concept_ids=list(self.concept_ids),
            score=self.score,
            rationale=self.rationale,
            cited_message_ids=list(self.cited_message_ids),
        )


def write_proposals(
    store: CorpusStore, proposals: list[ScoredProposal], run_id: str, now: datetime
) -> Counter:
    """Upsert the run's proposals; returns counts of inserted / updated / unchanged / revived / decided /
    staled rows. The caller holds the corpus write lock."""
    lp = lifecycle_proposals.c
    wanted = {p.proposal_id(store.name): p for p in proposals}
    counts: Counter = Counter()
    with store.staging.begin() as conn:
        existing = {r["proposal_id"]: dict(r) for r in conn.execute(select(lifecycle_proposals)).mappings()}
        inserts = []
        for pid, p in wanted.items():
            content = {
                "category": p.category,
                "concept_ids": p.concept_ids,
                "score": p.score,
                "rationale": p.rationale,
                "cited_message_ids": p.cited_message_ids,
                "proposer": p.proposer,
                "payload": p.payload,
            }
            row = existing.get(pid)
            if row is None:
                inserts.append(
                    {
                        "proposal_id": pid,
                        **content,
                        "status": PENDING,
                        "run_id": run_id,
                        "created_at": now,
                        "reviewed_at": None,
                        "review_note": None,
                        "updated_at": None,
                    }
                )
                counts["inserted"] += 1
            elif row["status"] == PENDING:
                if any(row[k] != content[k] for k in CONTENT_FIELDS):
                    conn.execute(
                        update(lifecycle_proposals)
                        .where(lp.proposal_id == pid)
                        .values(**content, run_id=run_id, updated_at=now)
                    )
                    counts["updated"] += 1
                else:
                    counts["unchanged"] += 1
            elif row["status"] == "stale":
                conn.execute(
                    update(lifecycle_proposals)
                    .where(lp.proposal_id == pid)
                    .values(
                        **content,
                        status=PENDING,
                        run_id=run_id,
                        updated_at=now,
                        reviewed_at=None,
                        review_note=None,
                    )
                )
                counts["revived"] += 1
            else:
                counts["already_decided"] += 1
        if inserts:
            conn.execute(lifecycle_proposals.insert(), inserts)
        gone = [pid for pid, row in existing.items() if row["status"] == PENDING and pid not in wanted]
        for pid in gone:
            conn.execute(
                update(lifecycle_proposals)
                .where(lp.proposal_id == pid)
                .values(
                    status="stale",
                    reviewed_at=now,
                    review_note=f"no longer proposed by triage run {run_id}",
                )
            )
        counts["staled"] += len(gone)
    return counts


def load_proposals(
    store: CorpusStore, proposal_ids: list[str] | None = None, categories: list[str] | None = None
) -> list[dict]:
    """Pending proposals, or exactly the given ids (a rejected, stale or rolled-back one may be retried, an
    applied one may not), in Phase 1 order: merges, then splits, noise and hubs last (a hub is refined
    after its duplicates were merged), best first."""
    lp = lifecycle_proposals.c
    query = select(lifecycle_proposals)
    if proposal_ids:
        query = query.where(lp.proposal_id.in_(list(proposal_ids)))
    else:
        query = query.where(lp.status == PENDING)
    if categories:
        query = query.where(lp.category.in_(list(categories)))
    with store.staging.connect() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    if proposal_ids:
        missing = sorted(set(proposal_ids) - {r["proposal_id"] for r in rows})
        if missing:
            raise GardenerError(f"unknown proposal id(s) in corpus {store.name!r}: {', '.join(missing)}")
        applied = sorted(r["proposal_id"] for r in rows if r["status"] == "applied")
        if applied:
            raise GardenerError(
                f"proposal(s) {', '.join(applied)} already applied; roll their actions back to redo them"
            )
    order = {"merge": 0, "split": 1, "noise": 2, "macro_concept": 3}
    rows.sort(key=lambda r: (order.get(r["category"], 9), -r["score"], r["proposal_id"]))
    return rows


def set_status(conn, proposal_id: str, status: str, now: datetime, note: str | None = None) -> None:
    conn.execute(
        update(lifecycle_proposals)
        .where(lifecycle_proposals.c.proposal_id == proposal_id)
        .values(status=status, reviewed_at=now, review_note=note)
    )
