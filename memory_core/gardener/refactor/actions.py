"""Phase 1's finite action space, each action turned into (before, after) snapshots of the concepts it touches.

| action | touches | effect |
|---|---|---|
| refine_concept | one concept | new title / type / description / aliases; revision_count + 1 |
| merge_concepts | canonical + merged (+ concepts relating to them) | evidence, mentions, names and relations re-pointed to the canonical; each merged concept kept as a pointer: state `merged`, `merged_into` = canonical |
| split_concept | the concept + one new concept per evidence group | every linked mention (and its evidence) handed to exactly one new concept; the old one kept with state `split` |
| create_relation | the source concept | one typed relation, only when a cited message is explicit evidence: it is evidence of one concept and names the other, or is evidence of both |
| archive_concept | one concept | state and trust `archived` (ephemeral noise); evidence kept |

Every action cites source message ids, all among the evidence of the concepts it touches; an action
without them, on a concept that is no longer live, or with malformed parameters is refused
(`RefusedActionError`) and nothing is changed.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from memory_core.concepts.names import merge_aliases, normalise_name
from memory_core.concepts.policy import ConceptPolicy, noisy_or, state_for
from memory_core.concepts.store import concept_from_json, concept_to_json
from memory_core.gardener.common import compatible, mention_info
from memory_core.gardener.errors import RefusedActionError
from memory_core.gardener.refactor.state import Workspace
from memory_core.ids import stable_uuid
from memory_core.ontology.concepts import (
    CONCEPT_TYPES,
    LIVE_STATES,
    RELATION_TYPES,
    ConceptHypothesis,
    ConceptRelation,
)
from memory_core.store.schema import messages

ACTIONS = ("refine_concept", "merge_concepts", "split_concept", "create_relation", "archive_concept")
LOG_ACTION = {
    "refine_concept": "refine",
    "merge_concepts": "merge",
    "split_concept": "split",
    "create_relation": "relate",
    "archive_concept": "archive",
}
REFINABLE = ("title", "type", "description", "aliases")


@dataclass
class EvidenceGroup:
    """One new concept of a split: the mentions it takes (and optionally its own title/type/description)."""

    mention_ids: list[str]
    title: str = ""
    type: str = ""
    description: str = ""


@dataclass
class PlannedAction:
    action: str
    concept_ids: list[str]  # merge: canonical first; create_relation: [source, target]
    rationale: str
    cited_message_ids: list[str]
    proposal_id: str | None = None
    changes: dict = field(default_factory=dict)  # refine_concept: a subset of REFINABLE
    groups: list[EvidenceGroup] = field(default_factory=list)  # split_concept
    relation: str = ""  # create_relation
    confidence: float = 0.0  # create_relation
    read_segment_ids: list[str] = field(default_factory=list)
    scores: dict = field(default_factory=dict)

    def describe(self) -> dict:
        return {
            "action": self.action,
            "concept_ids": self.concept_ids,
            "proposal_id": self.proposal_id,
            "rationale": self.rationale,
            "cited_message_ids": self.cited_message_ids,
            "changes": self.changes,
            "groups": [g.__dict__ for g in self.groups],
            "relation": self.relation,
            "read_segment_ids": self.read_segment_ids,
        }


def names_concept(text: str, concept: ConceptHypothesis) -> bool:
    """Does `text` name the concept (title or an alias, whole words, case- and punctuation-insensitive)?"""
    haystack = f" {normalise_name(text)} "
    return any(
        f" {n} " in haystack
        for n in (normalise_name(x) for x in (concept.title, *concept.aliases))
        if len(n) >= 2
    )


def _assign(concept: ConceptHypothesis, **values) -> None:
    for key, value in values.items():
        setattr(concept, key, value)  # validated: plain values become typed fields


class ActionBuilder:
    """Validates planned actions against a `Workspace` and computes their after-states."""

    def __init__(self, ws: Workspace, corpus: str, policy: ConceptPolicy | None = None):
        self.ws = ws
        self.corpus = corpus
        self.policy = policy or ConceptPolicy()

    def build(self, action: PlannedAction, now: datetime) -> tuple[dict, dict]:
        if action.action not in ACTIONS:
            raise RefusedActionError(
                f"unknown action {action.action!r}: the action space is {', '.join(ACTIONS)}"
            )
        if not action.concept_ids:
            raise RefusedActionError(f"{action.action} names no concept")
        if not [m for m in action.cited_message_ids if m]:
            raise RefusedActionError(
                f"{action.action} on {', '.join(action.concept_ids)} cites no source message ids: every "
                "gardener action must cite the messages it rests on"
            )
        if not action.rationale.strip():
            raise RefusedActionError(f"{action.action} on {', '.join(action.concept_ids)} has no rationale")
        if len(set(action.concept_ids)) != len(action.concept_ids):
            raise RefusedActionError(f"{action.action} names a concept twice")
        for cid in action.concept_ids:
            concept = self.ws.concept(cid)
            if concept is None:
                raise RefusedActionError(f"{action.action}: unknown concept {cid}")
            if concept.state not in LIVE_STATES:
                raise RefusedActionError(
                    f"{action.action}: concept {cid} ({concept.title!r}) is {concept.state}, not live"
                )
        evidence_messages = {e["message_id"] for c in action.concept_ids for e in self.ws.evidence(c)}
        outside = sorted(set(action.cited_message_ids) - evidence_messages)
        if outside:
            raise RefusedActionError(
                f"{action.action} cites message(s) that are not evidence of the concepts it touches: "
                + ", ".join(outside[:5])
            )
        return getattr(self, f"_{action.action}")(action, now)

    # --------------------------------------------------------------------------------------- refine
    def _refine_concept(self, action: PlannedAction, now: datetime) -> tuple[dict, dict]:
        if len(action.concept_ids) != 1:
            raise RefusedActionError("refine_concept takes exactly one concept")
        unknown = set(action.changes) - set(REFINABLE)
        if unknown:
            raise RefusedActionError(
                f"refine_concept may change only {', '.join(REFINABLE)} (got {sorted(unknown)})"
            )
        cid = action.concept_ids[0]
        before = self.ws.snapshot([cid])
        head = concept_from_json(before["concepts"][cid])
        changes = dict(action.changes)
        if "type" in changes and changes["type"] not in CONCEPT_TYPES:
            raise RefusedActionError(f"refine_concept: type {changes['type']!r} is outside the ontology")
        for key in ("title", "description"):
            if key in changes and not str(changes[key]).strip():
                raise RefusedActionError(f"refine_concept: empty {key}")
        if "title" in changes:
            changes["title"] = changes["title"].strip()
        if "description" in changes:
            changes["description"] = changes["description"].strip()
        if "aliases" in changes:
            changes["aliases"] = merge_aliases(changes.get("title", head.title), [], list(changes["aliases"]))
        changes = {k: v for k, v in changes.items() if getattr(head, k) != v}
        if not changes:
            raise RefusedActionError(f"refine_concept on {head.title!r} changes nothing")
        _assign(head, **changes, revision_count=head.revision_count + 1, recorded_at=now)
        return before, self._with(before, {cid: head})

    # --------------------------------------------------------------------------------------- archive
    def _archive_concept(self, action: PlannedAction, now: datetime) -> tuple[dict, dict]:
        if len(action.concept_ids) != 1:
            raise RefusedActionError("archive_concept takes exactly one concept")
        cid = action.concept_ids[0]
        before = self.ws.snapshot([cid])
        head = concept_from_json(before["concepts"][cid])
        _assign(head, state="archived", trust="archived", recorded_at=now)
        return before, self._with(before, {cid: head})

    # --------------------------------------------------------------------------------------- relation
    def _create_relation(self, action: PlannedAction, now: datetime) -> tuple[dict, dict]:
        if len(action.concept_ids) != 2:
            raise RefusedActionError("create_relation takes [source, target]")
        if action.relation not in RELATION_TYPES:
            raise RefusedActionError(
                f"create_relation: relation {action.relation!r} is not one of {', '.join(RELATION_TYPES)}"
            )
        source, target = action.concept_ids
        before = self.ws.snapshot([source])
        head = concept_from_json(before["concepts"][source])
        tail = self.ws.concept(target)
        if any(r.target_id == target and r.relation == action.relation for r in head.relations):
            raise RefusedActionError(
                f"create_relation: {head.title!r} already {action.relation} {tail.title!r}"
            )
        evidence_of = {cid: {e["message_id"] for e in self.ws.evidence(cid)} for cid in (source, target)}
        texts = message_texts(self.ws.store, action.cited_message_ids)
        explicit = [
            m
            for m in action.cited_message_ids
            if (m in evidence_of[source] and m in evidence_of[target])
            or (m in evidence_of[source] and names_concept(texts.get(m, ""), tail))
            or (m in evidence_of[target] and names_concept(texts.get(m, ""), head))
        ]
        if not explicit:
            raise RefusedActionError(
                f"create_relation {head.title!r} {action.relation} {tail.title!r}: no cited message is "
                "explicit evidence (evidence of both concepts, or evidence of one that names the other)"
            )
        confidence = round(min(1.0, max(0.0, action.confidence or 0.5)), 4)
        relations = sorted(
            [
                *(r.model_dump() for r in head.relations),
                {"target_id": target, "relation": action.relation, "confidence": confidence},
            ],
            key=lambda r: (r["target_id"], r["relation"]),
        )
        _assign(head, relations=relations, recorded_at=now)
        return before, self._with(before, {source: head})

    # --------------------------------------------------------------------------------------- merge
    def _merge_concepts(self, action: PlannedAction, now: datetime) -> tuple[dict, dict]:
        if len(action.concept_ids) < 2:
            raise RefusedActionError("merge_concepts takes a canonical concept and at least one to merge")
        canonical, *merged = action.concept_ids
        concepts = {c: self.ws.concept(c) for c in action.concept_ids}
        for cid in merged:
            a, b = concepts[canonical], concepts[cid]
            if not compatible(a.type, b.type):
                raise RefusedActionError(
                    f"merge_concepts: {b.title!r} ({b.type}) and {a.title!r} ({a.type}) are not type-compatible"
                )
        third = sorted(
            {t for cid in merged for t in self.ws.incoming_relations(cid)} - set(action.concept_ids)
        )
        before = self.ws.snapshot([*action.concept_ids, *third])
        after = copy.deepcopy(before)
        head = concept_from_json(before["concepts"][canonical])
        evidence = after["evidence"][canonical]
        held = {(s.message_id, s.char_start, s.char_end) for s in head.evidence_spans}
        held_rows = {(r["message_id"], r["span_start"], r["span_end"]) for r in evidence}
        gone = set(merged)
        for cid in merged:
            other = concept_from_json(before["concepts"][cid])
            added = 0
            for span in other.evidence_spans:
                key = (span.message_id, span.char_start, span.char_end)
                if key not in held:
                    held.add(key)
                    head.evidence_spans.append(span)
                    added += 1
            for r in before["evidence"][cid]:
                key = (r["message_id"], r["span_start"], r["span_end"])
                if key not in held_rows:  # the same span twice would be one EVIDENCE_FOR edge twice
                    held_rows.add(key)
                    evidence.append(r)
            _assign(
                head,
                aliases=merge_aliases(head.title, head.aliases, [other.title, *other.aliases]),
                support_count=head.support_count + added,
                confidence=round(1.0 - (1.0 - head.confidence) * (1.0 - other.confidence), 4),
                first_seen=min(head.first_seen, other.first_seen),
                last_seen=max(head.last_seen, other.last_seen),
                relations=_union_relations(head.relations, other.relations, gone, canonical),
            )
            _assign(
                other,
                state="merged",
                merged_into=canonical,
                evidence_spans=[],
                relations=[],
                revision_count=other.revision_count + 1,
                recorded_at=now,
            )
            after["concepts"][cid] = concept_to_json(other)
            after["evidence"][cid] = []
        if head.state in LIVE_STATES:
            head.state = state_for(head.confidence, self.policy.active_confidence)
        _assign(head, revision_count=head.revision_count + 1, recorded_at=now)
        after["concepts"][canonical] = concept_to_json(head)
        after["evidence"][canonical] = sorted(evidence, key=lambda r: (r["mention_id"], r["message_id"]))
        for tid in third:
            row = concept_from_json(before["concepts"][tid])
            _assign(
                row,
                relations=_union_relations([], row.relations, gone, canonical, self_id=tid),
                recorded_at=now,
            )
            after["concepts"][tid] = concept_to_json(row)
        for mention_id, cid in before["mention_links"].items():
            if cid in gone:
                after["mention_links"][mention_id] = canonical
        return before, after

    # --------------------------------------------------------------------------------------- split
    def _split_concept(self, action: PlannedAction, now: datetime) -> tuple[dict, dict]:
        if len(action.concept_ids) != 1:
            raise RefusedActionError("split_concept takes exactly one concept")
        cid = action.concept_ids[0]
        groups = [g for g in action.groups if g.mention_ids]
        if len(groups) < 2:
            raise RefusedActionError("split_concept needs at least two non-empty evidence groups")
        linked = set(self.ws.linked_mentions(cid))
        assigned = [m for g in groups for m in g.mention_ids]
        if len(assigned) != len(set(assigned)) or set(assigned) != linked:
            raise RefusedActionError(
                f"split_concept: the groups must hand out each of the concept's {len(linked)} mentions exactly "
                f"once (got {len(assigned)} assignments, {len(set(assigned) - linked)} unknown, "
                f"{len(linked - set(assigned))} missing)"
            )
        for g in groups:
            if g.type and g.type not in CONCEPT_TYPES:
                raise RefusedActionError(f"split_concept: type {g.type!r} is outside the ontology")
        info = mention_info(self.ws.store, sorted(linked))
        children = [stable_uuid("concept", self.corpus, "split", cid, *sorted(g.mention_ids)) for g in groups]
        outside_children = [c for c in children if self.ws.concept(c) is not None]
        if outside_children:
            raise RefusedActionError(f"split_concept: concept {outside_children[0]} exists already")
        incoming = sorted(set(self.ws.incoming_relations(cid)) - {cid})
        before = self.ws.snapshot([cid, *children, *incoming])
        after = copy.deepcopy(before)
        head = concept_from_json(before["concepts"][cid])
        rows = before["evidence"][cid]
        # the largest group keeps the old concept's relations and receives relations pointing at it
        largest = max(range(len(groups)), key=lambda i: (len(groups[i].mention_ids), -i))
        for i, (g, child_id) in enumerate(zip(groups, children, strict=True)):
            mine = set(g.mention_ids)
            child_rows = [r for r in rows if r["mention_id"] in mine]
            keys = {(r["message_id"], r["span_start"], r["span_end"]) for r in child_rows}
            spans = [s for s in head.evidence_spans if (s.message_id, s.char_start, s.char_end) in keys]
            confidence = 0.0
            for r in child_rows:
                confidence = noisy_or(confidence, r["confidence"], self.policy.evidence_weight)
            seen = [info[m]["message_created_at"] for m in g.mention_ids]
            names = [n for m in g.mention_ids for n in (info[m]["title"], *info[m]["aliases"])]
            child = head.model_copy(deep=True)
            _assign(
                child,
                concept_id=child_id,
                title=(g.title or head.title).strip(),
                type=g.type or head.type,
                description=(g.description or head.description).strip(),
                state=state_for(confidence, self.policy.active_confidence),
                confidence=confidence,
                aliases=merge_aliases(g.title or head.title, [], [*names, *head.aliases])
                if names
                else list(head.aliases),
                evidence_spans=spans,
                relations=list(head.relations) if i == largest else [],
                revision_count=head.revision_count + 1,
                support_count=len(spans),
                first_seen=min(seen),
                last_seen=max(seen),
                recorded_at=now,
                merged_into="",
            )
            after["concepts"][child_id] = concept_to_json(child)
            after["evidence"][child_id] = child_rows
            for m in g.mention_ids:
                after["mention_links"][m] = child_id
        _assign(
            head,
            state="split",
            evidence_spans=[],
            relations=[],
            revision_count=head.revision_count + 1,
            recorded_at=now,
        )
        after["concepts"][cid] = concept_to_json(head)
        after["evidence"][cid] = []
        for tid in incoming:
            row = concept_from_json(before["concepts"][tid])
            relations = _union_relations([], row.relations, {cid}, children[largest], self_id=tid)
            _assign(row, relations=relations, recorded_at=now)
            after["concepts"][tid] = concept_to_json(row)
        return before, after

    def _with(self, before: dict, concepts: dict[str, ConceptHypothesis]) -> dict:
        after = copy.deepcopy(before)
        for cid, concept in concepts.items():
            after["concepts"][cid] = concept_to_json(concept)
        return after


def _union_relations(
    base: list[ConceptRelation],
    extra: list[ConceptRelation],
    gone: set[str],
    into: str,
    self_id: str | None = None,
) -> list[dict]:
    """Relations of `base` + `extra` with targets in `gone` re-pointed to `into`, no self-relations, the
    highest confidence kept per (target, relation)."""
    out: dict[tuple[str, str], float] = {}
    owner = self_id or into
    for rel in [*base, *extra]:
        target = into if rel.target_id in gone else rel.target_id
        if target == owner:
            continue
        key = (target, rel.relation)
        out[key] = max(out.get(key, 0.0), rel.confidence)
    return [{"target_id": t, "relation": r, "confidence": c} for (t, r), c in sorted(out.items())]


def message_texts(store, message_ids: list[str]) -> dict[str, str]:
    ids = sorted(set(message_ids))
    out: dict[str, str] = {}
    with store.source.connect() as conn:
        for i in range(0, len(ids), 500):
            out.update(
                conn.execute(
                    select(messages.c.message_id, messages.c.text).where(
                        messages.c.message_id.in_(ids[i : i + 500])
                    )
                ).all()
            )
    return out


def majority_type(types: list[str], minimum_share: float = 0.6) -> str | None:
    if not types:
        return None
    kind, n = Counter(types).most_common(1)[0]
    return kind if n / len(types) >= minimum_share and kind in CONCEPT_TYPES else None
