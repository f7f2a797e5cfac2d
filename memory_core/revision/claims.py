"""The claims stage: every fact-bearing mention's claims as rows, with subject, slot, valid time and status.

For each mention whose teacher listed claims (`mentions.claims`), each claim is resolved:
- the subject: "speaker" is the message's author (a named author by name, else the role), "speaker's
  sister" the author's sister, any other name that person;
- the slot key: slot plus normalised qualifier ("possession:cat"); the value also normalised, for comparing;
- the valid time: the date the text states (resolved by the teacher against the message time), else the
  utterance time; the recorded time is the system time the claim was first stored;
- the status: `active`; `archived` when the message is on an abandoned ChatGPT branch (kept and citable,
  never current); `stale` or `rejected` when its source changed (`memory_core.revision.grounding`).
Rerunning changes only what changed: new claims are inserted, a claim whose grounding or concept link
moved is updated with the reason and time of its new status. `disputed` is the fact-states stage's word and
is kept as long as the claim stays grounded.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Text, bindparam, cast, insert, select, update

from memory_core.ids import stable_uuid
from memory_core.ontology.claims import SLOT_NAMES, slot_key
from memory_core.reports import Figures
from memory_core.revision.grounding import current_segment_ids, grounding, source_messages
from memory_core.revision.scan import ReadSpan, scan_messages
from memory_core.revision.slots import normalise_qualifier, normalise_value, subject_key
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import claims, mentions

ABANDONED_BRANCH = "abandoned ChatGPT branch: kept and citable, never current"
_UPDATABLE = ("concept_id", "state", "state_reason", "state_changed_at", "segment_id")
_MAX_STATED_AHEAD_DAYS = 3 * 365  # a stated start further ahead than this is a misreading, not a plan


@dataclass
class ClaimsReport:
    mentions_with_claims: int = 0
    claims: int = 0
    new: int = 0
    updated: int = 0
    by_status: Counter = field(default_factory=Counter)
    by_slot: Counter = field(default_factory=Counter)
    status_changes: Counter = field(default_factory=Counter)  # "active→rejected" ...
    dropped: Counter = field(default_factory=Counter)  # teacher claims not kept, by reason
    stated_valid_time: int = 0
    scanned: int = 0  # claims the slot rules read in messages beyond the teacher's concepts
    seconds: float = 0.0

    def as_metadata(self) -> Figures:
        return {
            "claims": self.claims,
            "claims_new": self.new,
            "claims_updated": self.updated,
            "claims_by_status": dict(self.by_status),
            "claims_by_slot": dict(self.by_slot.most_common()),
            "status_changes": dict(self.status_changes),
            "claims_dropped": dict(self.dropped),
            "mentions_with_claims": self.mentions_with_claims,
            "stated_valid_time": self.stated_valid_time,
            "claims_read_in_messages": self.scanned,
            "seconds": round(self.seconds, 3),
        }


def _parse_day(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip()[:10]) if text and text.strip() else None
    except ValueError:
        return None


def claim_rows(
    read: ReadSpan, message, segment_current: bool, now: datetime, report: ClaimsReport
) -> list[dict]:
    """The claim rows read in one span (statuses as its source stands now)."""
    status, reason = grounding(message, read.span_start, read.span_end, read.surface, segment_current)
    if status == "active" and message is not None and not message.on_active_branch:
        status, reason = "archived", ABANDONED_BRANCH
    author, role = (message.author, message.role) if message is not None else ("", "user")
    rows = []
    for raw in read.claims:
        slot = str(raw.get("slot", ""))
        if slot not in SLOT_NAMES:
            report.dropped["unknown_slot"] += 1
            continue
        qualifier = normalise_qualifier(str(raw.get("qualifier", "")))
        value = " ".join(str(raw.get("value", "")).split())
        value_norm = normalise_value(slot, value)
        if not value_norm:
            report.dropped["empty_value"] += 1
            continue
        subject, label = subject_key(str(raw.get("subject", "")), author, role)
        polarity = "negated" if raw.get("polarity") == "negated" else "affirmed"
        stated = _parse_day(str(raw.get("valid_from", "")))
        spoken = read.spoken_at
        if stated is not None and (stated.year < 1900 or (stated - spoken).days > _MAX_STATED_AHEAD_DAYS):
            report.dropped["implausible_valid_time"] += 1
            stated = None
        attribute = slot_key(slot, qualifier)
        rows.append(
            dict(
                claim_id=stable_uuid("claim", read.key, subject, attribute, value_norm, polarity),
                concept_id=read.concept_id,
                message_id=read.message_id,
                text=read.surface,
                state=status,
                recorded_at=now,
                mention_id=read.mention_id,
                segment_id=read.segment_id,
                conversation_id=read.conversation_id,
                subject=subject,
                subject_label=label,
                slot=slot,
                qualifier=qualifier,
                attribute=attribute,
                value=value,
                value_norm=value_norm,
                polarity=polarity,
                span_start=read.span_start,
                span_end=read.span_end,
                valid_from=stated or spoken,
                valid_time_source="stated" if stated is not None else "utterance",
                spoken_at=spoken,
                state_reason=reason,
                state_changed_at=now,
                extractor=read.extractor,
                on_active_branch=message.on_active_branch if message is not None else True,
            )
        )
    return rows


def _mentions_with_claims(store: CorpusStore) -> list:
    mn = mentions.c
    with store.staging.connect() as conn:
        return conn.execute(
            select(
                mn.mention_id,
                mn.segment_id,
                mn.message_id,
                mn.conversation_id,
                mn.span_start,
                mn.span_end,
                mn.surface,
                mn.consolidated_id,
                mn.extractor,
                mn.message_created_at,
                mn.claims,
            ).where(mn.claims.is_not(None), cast(mn.claims, Text) != "[]")
        ).all()


def _next_status(old: dict, new: dict) -> str:
    """A grounded claim keeps `disputed` (the fact-states stage's finding); anything else follows its source."""
    if new["state"] == "active" and old["state"] == "disputed":
        return "disputed"
    return new["state"]


def build_claims(store: CorpusStore, now: datetime | None = None, scan: bool = True) -> ClaimsReport:
    """Write the claims of every fact-bearing mention (and, with `scan`, those the slot rules read in people's
    messages the offline teacher made no concept of); re-ground the ones already stored. The caller holds
    the corpus write lock."""
    started = time.perf_counter()
    now = now or utcnow()
    report = ClaimsReport()
    found = [ReadSpan.of_mention(m) for m in _mentions_with_claims(store)]
    report.mentions_with_claims = len(found)
    current = current_segment_ids(store)
    sources = source_messages(store, {m.message_id for m in found})
    fresh: dict[str, dict] = {}
    for read in found:
        for row in claim_rows(read, sources.get(read.message_id), read.segment_id in current, now, report):
            fresh.setdefault(row["claim_id"], row)
    if scan:
        said = {(r["message_id"], r["subject"], r["attribute"], r["value_norm"]) for r in fresh.values()}
        scanned = scan_messages(store)
        sources.update(source_messages(store, {r.message_id for r in scanned} - set(sources)))
        for read in scanned:
            for row in claim_rows(read, sources.get(read.message_id), True, now, report):
                if (row["message_id"], row["subject"], row["attribute"], row["value_norm"]) not in said:
                    fresh.setdefault(row["claim_id"], row)
                    report.scanned += 1
    with store.staging.connect() as conn:
        stored = {r["claim_id"]: dict(r) for r in conn.execute(select(claims)).mappings()}
    inserts, changes = [], []
    for claim_id, row in fresh.items():
        old = stored.get(claim_id)
        if old is None:
            inserts.append(row)
            continue
        status = _next_status(old, row)
        change = {k: row[k] for k in ("concept_id", "segment_id") if old[k] != row[k]}
        if status != old["state"]:
            change.update(state=status, state_reason=row["state_reason"], state_changed_at=now)
            report.status_changes[f"{old['state']}→{status}"] += 1
        if change:
            changes.append({"b_claim_id": claim_id, **{f"b_{k}": change.get(k, old[k]) for k in _UPDATABLE}})
    gone = [old for claim_id, old in stored.items() if claim_id not in fresh and old["state"] != "rejected"]
    texts = source_messages(store, {old["message_id"] for old in gone})
    for old in gone:  # a claim no longer read where it was: its source changed, or its mention went
        status, reason = grounding(
            texts.get(old["message_id"]), old["span_start"], old["span_end"], old["text"], True
        )
        report.status_changes[f"{old['state']}→rejected"] += 1
        changes.append(
            {
                "b_claim_id": old["claim_id"],
                **{f"b_{k}": old[k] for k in _UPDATABLE},
                "b_state": "rejected",
                "b_state_reason": reason if status == "rejected" else "no longer read there (re-extracted)",
                "b_state_changed_at": now,
            }
        )
    with store.staging.begin() as conn:
        if inserts:
            conn.execute(insert(claims), inserts)
        if changes:
            conn.execute(
                update(claims)
                .where(claims.c.claim_id == bindparam("b_claim_id"))
                .values({k: bindparam(f"b_{k}") for k in _UPDATABLE}),
                changes,
            )
        for r in conn.execute(select(claims.c.state, claims.c.slot)):
            report.by_status[r.state] += 1
            report.by_slot[r.slot] += 1
    report.new, report.updated = len(inserts), len(changes)
    report.claims = sum(report.by_status.values())
    report.stated_valid_time = sum(1 for r in fresh.values() if r["valid_time_source"] == "stated")
    report.seconds = time.perf_counter() - started
    return report
