"""The repair worker's finite action space, each planned against a `Workspace` of concept snapshots and
applied in its own transaction: reattach, split, merge, archive, refine (and rebuild, only under
`global_resynthesis`). Each returns a `_Step` (before / after snapshots, rationale, cited claims and
messages) or None when it does not apply (see `memory_core.revision.repair` for when each is taken)."""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from memory_core.concepts import action_log as log
from memory_core.concepts.policy import ConceptPolicy, state_for
from memory_core.concepts.snapshots import Workspace, log_records, write_state
from memory_core.concepts.store import concept_from_json, concept_to_json, read_concepts
from memory_core.ids import stable_uuid
from memory_core.ontology.concepts import FACT_TYPES, LIVE_STATES, ConceptHypothesis, EvidenceSpan
from memory_core.ontology.titles import fact_title
from memory_core.revision.grounding import source_messages
from memory_core.revision.invalidation import concepts_in_dispute, supported_confidence
from memory_core.store.db import CorpusStore
from memory_core.store.schema import claims, concept_evidence, mentions, segments

ACTOR = "repair_worker"
_CHUNK = 500


@dataclass
class Step:
    action: str
    before: dict
    after: dict
    rationale: str
    cited_messages: list[str]
    cited_claims: list[str]


class _Context:
    """What the worker reads besides the concepts: current segments, claims, mentions, message times."""

    def __init__(self, store: CorpusStore):
        self.store = store
        self.pieces: dict[str, list[tuple[str, int, int]]] = defaultdict(
            list
        )  # message → (segment, start, end)
        with store.staging.connect() as conn:
            for seg_id, spans in conn.execute(
                select(segments.c.segment_id, segments.c.message_spans).where(
                    segments.c.superseded_at.is_(None)
                )
            ):
                for p in spans or []:
                    self.pieces[p["message_id"]].append((seg_id, p["start"], p["end"]))
            self.claims: dict[str, list[dict]] = defaultdict(list)  # mention → its grounded claims
            for r in conn.execute(
                select(claims).where(claims.c.state.in_(("active", "disputed")))
            ).mappings():
                self.claims[r["mention_id"]].append(dict(r))
            # as fact_states disputes them: a repair does not settle those
            self.disputed_concepts = concepts_in_dispute(conn)
        self._mentions: dict[str, dict] = {}

    def segment_for(self, message_id: str, start: int, end: int) -> str | None:
        for seg_id, a, b in self.pieces.get(message_id, []):
            if a <= start and end <= b:
                return seg_id
        return None

    def mentions(self, ids: list[str]) -> dict[str, dict]:
        missing = [m for m in dict.fromkeys(ids) if m not in self._mentions]
        with self.store.staging.connect() as conn:
            for i in range(0, len(missing), _CHUNK):
                for r in conn.execute(
                    select(mentions.c.mention_id, mentions.c.title, mentions.c.type, mentions.c.description,
                           mentions.c.confidence, mentions.c.message_created_at, mentions.c.consolidated_id)
                    .where(mentions.c.mention_id.in_(missing[i : i + _CHUNK]))
                ).mappings():  # fmt: skip
                    self._mentions[r["mention_id"]] = dict(r)
        return {m: self._mentions[m] for m in ids if m in self._mentions}

    def facts_of(self, evidence: list[dict]) -> dict[tuple[str, str], dict[str, list[dict]]]:
        """(subject, slot key) → value → claims, over the active evidence's mentions."""
        out: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
        for r in evidence:
            if r["status"] == "active":
                for c in self.claims.get(r["mention_id"], []):
                    out[(c["subject"], c["attribute"])][c["value_norm"]].append(c)
        return out

    def holders(self, message_ids: list[str], exclude: str) -> list[str]:
        """Live concepts with active evidence in these messages (the current text's concepts)."""
        with self.store.staging.connect() as conn:
            rows = conn.execute(
                select(concept_evidence.c.concept_id)
                .where(concept_evidence.c.message_id.in_(message_ids), concept_evidence.c.status == "active")
                .distinct()
            ).scalars()
            ids = [c for c in rows if c != exclude]
            live = read_concepts(conn, ids, states=LIVE_STATES)
        return sorted(live)


def _derived(
    concept: ConceptHypothesis, evidence: list[dict], times: dict[str, datetime], policy, cap: bool = False
) -> dict:
    """Support, confidence and freshness as the concept's active evidence gives them. With `cap` (a rebuild
    of a concept nothing changed) confidence is capped, never raised: the memory loop counted a restatement
    in a conversation it had already, or an instance of a broader concept, for less than a piece of
    independent evidence, and the evidence rows do not say which piece was which — the noisy-OR of them all
    is the most they support, not what the loop gave. The actions that change the evidence (reattach,
    merge, split …) take the noisy-OR: a reattached concept gets back what its evidence supports."""
    active = [r for r in evidence if r["status"] == "active"]
    supported = round(supported_confidence(evidence, policy), 4)
    out: dict = {
        "support_count": len(active),
        "confidence": min(concept.confidence, supported) if cap else supported,
    }
    seen = [times[r["message_id"]] for r in active if r["message_id"] in times]
    if seen:
        out["first_seen"], out["last_seen"] = min(seen), max(seen)
    if concept.live:
        out["state"] = state_for(out["confidence"], policy.active_confidence)
    return out


def _spans(evidence: list[dict]) -> list[EvidenceSpan]:
    return [
        EvidenceSpan(
            source_id=r["segment_id"],
            message_id=r["message_id"],
            text=r["text"],
            confidence=r["confidence"],
            char_start=r["span_start"],
            char_end=r["span_end"],
        )  # fmt: skip
        for r in evidence
    ]


class RepairWorker:
    def __init__(self, store: CorpusStore, policy: ConceptPolicy, run_id: str, now: datetime):
        self.store, self.policy, self.run_id, self.now = store, policy, run_id, now
        self.ws = Workspace(store)
        self.ctx = _Context(store)
        self.times: dict[str, datetime] = {}

    def _times(self, evidence: list[dict]) -> dict[str, datetime]:
        wanted = {r["message_id"] for r in evidence} - set(self.times)
        self.times.update({m: s.created_at for m, s in source_messages(self.store, wanted).items()})
        return self.times

    def _put(self, after: dict, cid: str, concept: ConceptHypothesis, evidence: list[dict]) -> None:
        concept.evidence_spans = _spans(evidence)
        concept.recorded_at = self.now
        after["concepts"][cid] = concept_to_json(concept)
        after["evidence"][cid] = evidence

    # ------------------------------------------------------------------------------------------ actions
    def reattach(self, cid: str) -> Step | None:
        before = self.ws.snapshot([cid])
        evidence = copy.deepcopy(before["evidence"][cid])
        moved = []
        for r in evidence:
            if r["status"] == "stale":
                seg = self.ctx.segment_for(r["message_id"], r["span_start"], r["span_end"])
                if seg is not None:
                    r["segment_id"], r["status"] = seg, "active"
                    moved.append(r)
        if not moved:
            return None
        concept = concept_from_json(before["concepts"][cid])
        for k, v in _derived(concept, evidence, self._times(evidence), self.policy).items():
            setattr(concept, k, v)
        if not any(r["status"] in ("stale", "rejected") for r in evidence) and concept.trust in (
            "stale",
            "weakened",
        ):
            concept.trust = "stable"
        after = copy.deepcopy(before)
        self._put(after, cid, concept, evidence)
        spans = ", ".join(f"{r['message_id']}[{r['span_start']}:{r['span_end']}]" for r in moved[:5])
        return Step("reattach", before, after,
                     f"{len(moved)} stale span(s) still read the same in their message: re-anchored to the current "
                     f"segment ({spans})", sorted({r["message_id"] for r in moved}),
                     self._claims_of(moved))  # fmt: skip

    def split(self, cid: str) -> Step | None:
        before = self.ws.snapshot([cid])
        evidence = before["evidence"][cid]
        mixed = {k: v for k, v in self.ctx.facts_of(evidence).items() if len(v) > 1}
        if not mixed:
            return None
        key, by_value = sorted(mixed.items())[0]
        concept = concept_from_json(before["concepts"][cid])
        own = f"{concept.title} {concept.description}".casefold()
        # the concept keeps the value it is about (its own words), else the best supported, earliest told
        keep = max(
            by_value,
            key=lambda v: (
                any(c["value"].casefold() in own for c in by_value[v]),
                len(by_value[v]),
                -min(c["spoken_at"] for c in by_value[v]).timestamp(),
            ),
        )
        after = copy.deepcopy(before)
        moving: dict[str, set[str]] = {
            v: {c["mention_id"] for c in cs} for v, cs in by_value.items() if v != keep
        }
        new_ids = []
        for value, mids in sorted(moving.items()):
            rows = [r for r in evidence if r["mention_id"] in mids]
            mention = max(
                self.ctx.mentions(sorted(mids)).values(), key=lambda m: (m["confidence"], m["mention_id"])
            )
            nid = stable_uuid("concept", self.store.name, "split", cid, key[1], value)
            child = concept.model_copy(deep=True)
            child.concept_id, child.title, child.description = nid, mention["title"], mention["description"]
            child.relations, child.aliases, child.revision_count, child.merged_into = [], [], 0, ""
            child.trust = "stable"
            rows = [{**r} for r in rows]
            for k, v in _derived(child, rows, self._times(rows), self.policy).items():
                setattr(child, k, v)
            self._put(after, nid, child, rows)
            before["concepts"].setdefault(nid, None)
            before["evidence"].setdefault(nid, [])
            for m in mids:
                after["mention_links"][m] = nid
            new_ids.append(nid)
        kept = [r for r in evidence if not any(r["mention_id"] in m for m in moving.values())]
        for k, v in _derived(concept, kept, self._times(kept), self.policy).items():
            setattr(concept, k, v)
        concept.revision_count += 1
        # a live dispute stays (fact_states would dispute it again): the split settles only what it split
        concept.trust = "disputed" if cid in self.ctx.disputed_concepts else "stable"
        self._put(after, cid, concept, kept)
        cited = [c for cs in by_value.values() for c in cs]
        return Step("split", before, after,
                     f"it held {len(by_value)} values of {key[1]} for {key[0]} ({', '.join(sorted(by_value))}): "
                     f"kept {keep!r}, the others moved to {', '.join(new_ids)}",
                     sorted({c["message_id"] for c in cited}), sorted(c["claim_id"] for c in cited))  # fmt: skip

    def refine(self, cid: str) -> Step | None:
        before = self.ws.snapshot([cid])
        evidence = before["evidence"][cid]
        active = [r for r in evidence if r["status"] == "active"]
        if not active:
            return None
        concept = concept_from_json(before["concepts"][cid])
        # only its own mentions may describe it: the episodes and instances it is evidenced by describe
        # themselves ("The user often talks about cats" is not retitled after "adopted a third cat")
        mentions_ = {
            m: row
            for m, row in self.ctx.mentions([r["mention_id"] for r in active]).items()
            if row["consolidated_id"] == cid
        }
        notes = []
        if mentions_ and not any(
            m["description"].casefold() == concept.description.casefold() for m in mentions_.values()
        ):
            best = max(
                mentions_.values(), key=lambda m: (m["confidence"], m["message_created_at"], m["mention_id"])
            )
            title = (
                (fact_title(best["title"]) or best["title"]) if concept.type in FACT_TYPES else concept.title
            )
            notes.append(f"described from the surviving mention: {best['description'][:120]!r}")
            concept.title, concept.description = title, best["description"]
            concept.revision_count += 1
        for k, v in _derived(concept, evidence, self._times(evidence), self.policy).items():
            setattr(concept, k, v)
        disputed = cid in self.ctx.disputed_concepts or any(
            c["state"] == "disputed" for r in active for c in self.ctx.claims.get(r["mention_id"], [])
        )
        if concept.trust == "disputed" and disputed:
            return None  # a live conflict: not this action's to settle
        if concept.trust == "disputed":
            concept.relations = [r for r in concept.relations if r.relation != "conflicts_with"]
            notes.append("the dispute is settled: its claims are no longer disputed")
        concept.trust = "stable"
        after = copy.deepcopy(before)
        self._put(after, cid, concept, evidence)
        if _same(before, after, cid):
            return None
        lost = Counter(r["status"] for r in evidence if r["status"] != "active")
        notes.insert(0, f"{len(active)} active evidence span(s) survive ({dict(lost) or 'nothing lost'}); "
                        f"confidence {concept.confidence:.3f} as they support it")  # fmt: skip
        return Step(
            "refine",
            before,
            after,
            "; ".join(notes),
            sorted({r["message_id"] for r in active}),
            self._claims_of(active),
        )

    def merge(self, cid: str) -> Step | None:
        before_one = self.ws.snapshot([cid])
        evidence = before_one["evidence"][cid]
        facts = {(k, v) for k, vs in self.ctx.facts_of(evidence).items() for v in vs}
        if not facts:
            return None
        concept = concept_from_json(before_one["concepts"][cid])
        target = None
        for other in self.ctx.holders([c["message_id"] for (k, v) in facts for c in
                                       self.ctx.facts_of(evidence)[k][v]], cid):  # fmt: skip
            o = self.ws.concept(other)
            if o is None or o.type != concept.type or o.first_seen > concept.first_seen:
                continue
            theirs = {(k, v) for k, vs in self.ctx.facts_of(self.ws.evidence(other)).items() for v in vs}
            if facts <= theirs:
                target = other
                break
        if target is None:
            return None
        before = self.ws.snapshot([target, cid])
        after = copy.deepcopy(before)
        head = concept_from_json(before["concepts"][target])
        held = {(r["message_id"], r["span_start"], r["span_end"]) for r in before["evidence"][target]}
        merged_rows = before["evidence"][target] + [
            r
            for r in before["evidence"][cid]
            if (r["message_id"], r["span_start"], r["span_end"]) not in held
        ]
        for k, v in _derived(head, merged_rows, self._times(merged_rows), self.policy).items():
            setattr(head, k, v)
        head.revision_count += 1
        self._put(after, target, head, merged_rows)
        concept.state, concept.merged_into, concept.trust = "merged", target, "archived"
        concept.revision_count += 1
        self._put(after, cid, concept, [])
        for m, c in before["mention_links"].items():
            if c == cid:
                after["mention_links"][m] = target
        return Step("merge", before, after,
                     f"it states exactly the facts of the older concept {target} "
                     f"({', '.join(sorted(f'{k[1]}={v}' for k, v in facts))}): merged into it",
                     sorted({r["message_id"] for r in evidence}), self._claims_of(evidence))  # fmt: skip

    def archive(self, cid: str) -> Step | None:
        before = self.ws.snapshot([cid])
        evidence = before["evidence"][cid]
        if any(r["status"] == "active" for r in evidence):
            return None
        concept = concept_from_json(before["concepts"][cid])
        messages = sorted({r["message_id"] for r in evidence})
        replacements = self.ctx.holders(messages, cid) if messages else []
        concept.state, concept.trust = "archived", "archived"
        concept.revision_count += 1
        after = copy.deepcopy(before)
        self._put(after, cid, concept, evidence)
        why = Counter(r["status"] for r in evidence)
        then = (f"the current text of its messages is held by {', '.join(f'[Concept:{r}]' for r in replacements[:5])}"
                if replacements else "nothing in the current source replaces it")  # fmt: skip
        return Step(
            "archive",
            before,
            after,
            f"no surviving evidence ({dict(why)}); {then}",
            messages,
            sorted(c for r in evidence for c in self._all_claims(r["mention_id"])),
        )

    def rebuild(self, cid: str) -> Step | None:
        before = self.ws.snapshot([cid])
        evidence = before["evidence"][cid]
        concept = concept_from_json(before["concepts"][cid])
        if not concept.live or not evidence:
            return None
        for k, v in _derived(concept, evidence, self._times(evidence), self.policy, cap=True).items():
            setattr(concept, k, v)
        after = copy.deepcopy(before)
        self._put(after, cid, concept, evidence)
        if _same(before, after, cid):
            return None
        return Step(
            "rebuild",
            before,
            after,
            "support, confidence and freshness recomputed from its evidence",
            sorted({r["message_id"] for r in evidence}),
            self._claims_of(evidence),
        )

    def _claims_of(self, rows: list[dict]) -> list[str]:
        return sorted({c["claim_id"] for r in rows for c in self.ctx.claims.get(r["mention_id"], [])})

    def _all_claims(self, mention_id: str) -> list[str]:
        with self.store.staging.connect() as conn:
            return list(
                conn.execute(select(claims.c.claim_id).where(claims.c.mention_id == mention_id)).scalars()
            )

    # ------------------------------------------------------------------------------------------ applying
    def apply(self, step: Step) -> None:
        with self.store.staging.begin() as conn:
            write_state(conn, step.before, step.after)
            records = log_records(
                "repair", step.before, step.after, step.rationale, step.cited_messages,
                {"repair_action": step.action, "cited_claim_ids": step.cited_claims[:50]},
                self.run_id, self.now, actor=ACTOR,
            )  # fmt: skip
            log.append(conn, records)
        self.ws.put(step.after)


def _same(before: dict, after: dict, cid: str) -> bool:
    """Nothing but the time of recording (or the order its spans are listed in) differs for `cid` between
    two snapshots."""
    a, b = dict(before["concepts"][cid] or {}), dict(after["concepts"][cid] or {})
    for c in (a, b):
        c.pop("recorded_at", None)
        c["evidence_spans"] = sorted(c.get("evidence_spans") or [], key=_span_key)
    return a == b and before["evidence"].get(cid) == after["evidence"].get(cid)


def _span_key(span: dict) -> tuple:
    return (
        span.get("message_id") or "",
        span.get("char_start") or 0,
        span.get("char_end") or 0,
        span.get("source_id") or "",
    )
