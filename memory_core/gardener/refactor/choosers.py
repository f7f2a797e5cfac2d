"""Who decides what Phase 1 does with a proposal: the default rule-based chooser (conservative), or an LLM
agent through the strict client (`llm_chooser.py`). Both return a `Choice`; the executor validates every
planned action (`actions.ActionBuilder`) whichever chooser planned it.

Rules (`RuleBasedChooser`), per category:
- merge: members whose pair score reaches `merge_accept` are merged; a member in the ambiguous band is
  merged only after reading both concepts' source segments: the same (or unnamed) speakers and segment
  contexts at cosine ≥ `context_min`.
- split: at `split_accept` the triage clusters become new concepts; below, the clusters' source segments
  are read and the split goes ahead when the two groups are said by different people or their contexts
  are further apart across than within (by `split_context_margin`).
- noise: archived at `noise_accept`; below, the source is read and the concept is archived only when every
  evidence message is short chit-chat or already evidence of another live concept.
- macro_concept: below `macro_accept` the hub's source segments are read and it must be named in at least
  half of them. Then: refine (aliases from the names its mentions used, the majority type of its mentions,
  no description rewrite: rules do not write prose) and `instance_of` relations from the concepts whose
  title names it, each only when one of that concept's evidence messages names the hub (explicit evidence).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from memory_core.concepts.names import merge_aliases, normalise_name
from memory_core.embeddings.base import Embedder
from memory_core.gardener.refactor.actions import (
    EvidenceGroup,
    PlannedAction,
    majority_type,
    message_texts,
    names_concept,
)
from memory_core.gardener.refactor.neighbourhood import Neighbourhood

_WORDS = re.compile(r"\w+")


@dataclass
class Choice:
    decision: str  # act | reject | stale
    actions: list[PlannedAction] = field(default_factory=list)
    note: str = ""
    read_segment_ids: list[str] = field(default_factory=list)
    llm_calls: list = field(default_factory=list)  # StructuredResult of each LLM call made


class Chooser(ABC):
    name: str

    @abstractmethod
    def choose(self, hood: Neighbourhood) -> Choice:
        """What to do with the neighbourhood's proposal."""


@dataclass(frozen=True)
class ChooserRules:
    merge_accept: float = 0.75
    split_accept: float = 0.70
    noise_accept: float = 0.80
    macro_accept: float = 0.70
    context_min: float = 0.50
    split_context_margin: float = 0.05
    chit_chat_words: int = 12
    max_relations_per_hub: int = 8
    hub_alias_limit: int = 10
    segments_per_concept: int = 8


def live(hood: Neighbourhood, cid: str) -> bool:
    concept = hood.concepts.get(cid)
    return concept is not None and concept.live


def stale_note(hood: Neighbourhood) -> str | None:
    gone = [c for c in hood.proposal["concept_ids"] if not live(hood, c)]
    if not gone:
        return None
    states = ", ".join(f"{c} ({hood.concepts[c].state if c in hood.concepts else 'missing'})" for c in gone)
    return f"concepts no longer live: {states}"


class RuleBasedChooser(Chooser):
    name = "rules"

    def __init__(self, embedder: Embedder, rules: ChooserRules | None = None):
        self.embedder = embedder
        self.rules = rules or ChooserRules()

    def choose(self, hood: Neighbourhood) -> Choice:
        category = hood.proposal["category"]
        return getattr(self, f"_{category}")(hood)

    # -------------------------------------------------------------------------------------- helpers
    def _mean_vector(self, texts: list[str]) -> np.ndarray | None:
        if not texts:
            return None
        v = self.embedder.embed(texts).mean(axis=0)
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def _read(self, hood: Neighbourhood, cid: str) -> list[str]:
        ids = hood.segment_ids(cid)[: self.rules.segments_per_concept]
        return list(hood.read_source_segments(ids).values())

    def _cite(self, hood: Neighbourhood, ids: list[str], per_concept: int = 2) -> list[str]:
        out: list[str] = []
        for cid in ids:
            out += [m for m in hood.evidence_messages(cid, per_concept) if m not in out]
        return out

    # -------------------------------------------------------------------------------------- merge
    def _merge(self, hood: Neighbourhood) -> Choice:
        canonical, *members = hood.proposal["concept_ids"]
        if not live(hood, canonical):
            return Choice("stale", note=stale_note(hood) or "")
        pairs = (hood.proposal.get("payload") or {}).get("pairs", {})
        accepted, notes = [], []
        for m in members:
            title = hood.concepts[m].title if m in hood.concepts else m
            if not live(hood, m):
                notes.append(f"'{title}' is no longer live")
                continue
            score = pairs.get(m, {}).get("score", hood.proposal["score"])
            if score >= self.rules.merge_accept:
                accepted.append(m)
                notes.append(f"'{title}' merged at score {score:.2f}")
                continue
            same, why = self._same_context(hood, canonical, m)
            notes.append(f"'{title}' (score {score:.2f}, ambiguous; read the source segments: {why})")
            if same:
                accepted.append(m)
        read = sorted(hood.segments_read)
        if not accepted:
            return Choice("reject", note="; ".join(notes), read_segment_ids=read)
        head = hood.concepts[canonical]
        action = PlannedAction(
            action="merge_concepts",
            concept_ids=[canonical, *accepted],
            rationale=f"duplicates of '{head.title}' ({head.type}): " + "; ".join(notes) + ".",
            cited_message_ids=self._cite(hood, [canonical, *accepted]),
            proposal_id=hood.proposal["proposal_id"],
            read_segment_ids=read,
            scores={
                "proposal_score": hood.proposal["score"],
                "pairs": {m: pairs.get(m, {}) for m in accepted},
            },
        )
        return Choice("act", [action], "; ".join(notes), read)

    def _same_context(self, hood: Neighbourhood, a: str, b: str) -> tuple[bool, str]:
        pa, pb = hood.people_of(a), hood.people_of(b)
        texts_a, texts_b = self._read(hood, a), self._read(hood, b)
        if pa and pb and not pa & pb:
            return False, f"said by different people ({', '.join(sorted(pa))} vs {', '.join(sorted(pb))})"
        va, vb = self._mean_vector(texts_a), self._mean_vector(texts_b)
        if va is None or vb is None:
            return False, "no source segment to compare"
        cos = float(va @ vb)
        verdict = "close" if cos >= self.rules.context_min else "apart"
        return cos >= self.rules.context_min, f"source contexts {verdict} (cosine {cos:.2f})"

    # -------------------------------------------------------------------------------------- split
    def _split(self, hood: Neighbourhood) -> Choice:
        cid = hood.proposal["concept_ids"][0]
        if not live(hood, cid):
            return Choice("stale", note=stale_note(hood) or "")
        payload = hood.proposal.get("payload") or {}
        clusters = payload.get("clusters") or []
        linked = set(hood.ws.linked_mentions(cid))
        if {m for c in clusters for m in c["mention_ids"]} != linked or len(clusters) < 2:
            return Choice("stale", note="the concept's evidence changed since triage: rerun triage")
        score = hood.proposal["score"]
        head = hood.concepts[cid]
        note = f"score {score:.2f}"
        if score < self.rules.split_accept:
            ok, why = self._clusters_apart(hood, clusters, payload.get("disjoint_people", False))
            note += f", ambiguous; read the source segments: {why}"
            if not ok:
                return Choice("reject", note=note, read_segment_ids=sorted(hood.segments_read))
        info = {m["mention_id"]: m for m in hood.mentions.get(cid, [])}
        groups = [
            EvidenceGroup(
                mention_ids=list(c["mention_ids"]),
                title=head.title,
                type=majority_type([info[m]["type"] for m in c["mention_ids"] if m in info]) or head.type,
                description=c.get("label") or head.description,
            )
            for c in clusters
        ]
        cited: list[str] = []
        for c in clusters:
            cited += [m for m in c["message_ids"][:3] if m not in cited]
        sizes = " + ".join(str(len(g.mention_ids)) for g in groups)
        action = PlannedAction(
            action="split_concept",
            concept_ids=[cid],
            rationale=f"'{head.title}' splits into {len(groups)} concepts ({sizes} mentions): "
            + "; ".join(f"“{g.description[:80]}”" for g in groups)
            + f" ({note}).",
            cited_message_ids=cited,
            proposal_id=hood.proposal["proposal_id"],
            groups=groups,
            read_segment_ids=sorted(hood.segments_read),
            scores={
                "proposal_score": score,
                "within": payload.get("within"),
                "across": payload.get("across"),
            },
        )
        return Choice("act", [action], note, sorted(hood.segments_read))

    def _clusters_apart(
        self, hood: Neighbourhood, clusters: list[dict], disjoint_people: bool
    ) -> tuple[bool, str]:
        by_mention = {m["mention_id"]: m for ms in hood.mentions.values() for m in ms}
        vectors, insides = [], []
        for c in clusters[:2]:
            seg_ids = list(
                dict.fromkeys(by_mention[m]["segment_id"] for m in c["mention_ids"] if m in by_mention)
            )[: self.rules.segments_per_concept]
            texts = list(hood.read_source_segments(seg_ids).values())
            if not texts:
                return False, "no source segment to compare"
            v = self.embedder.embed(texts)
            insides.append(float((v @ v.T)[np.triu_indices(len(v), 1)].mean()) if len(v) > 1 else 1.0)
            mean = v.mean(axis=0)
            vectors.append(mean / (float(np.linalg.norm(mean)) or 1.0))
        across = float(vectors[0] @ vectors[1])
        within = float(np.mean(insides))
        if disjoint_people:
            return (
                True,
                f"the groups are said by different people (contexts {within:.2f} within, {across:.2f} across)",
            )
        ok = across <= within - self.rules.split_context_margin
        return ok, f"source contexts {within:.2f} within the groups vs {across:.2f} across"

    # -------------------------------------------------------------------------------------- noise
    def _noise(self, hood: Neighbourhood) -> Choice:
        cid = hood.proposal["concept_ids"][0]
        if not live(hood, cid):
            return Choice("stale", note=stale_note(hood) or "")
        score = hood.proposal["score"]
        head = hood.concepts[cid]
        note = f"score {score:.2f}"
        cited = hood.evidence_messages(cid, 3)
        if score < self.rules.noise_accept:
            self._read(hood, cid)
            msgs = hood.evidence_messages(cid)
            texts = message_texts(hood.store, msgs)
            covered = self._covered_by_others(hood, cid, msgs)
            short = [m for m in msgs if len(_WORDS.findall(texts.get(m, ""))) <= self.rules.chit_chat_words]
            unexplained = [m for m in msgs if m not in covered and m not in short]
            note += (
                f", ambiguous; read the source: {len(short)}/{len(msgs)} message(s) are short chit-chat, "
                f"{len(covered)}/{len(msgs)} already evidence of other concepts"
                + (
                    f" ({', '.join(sorted({t for ts in covered.values() for t in ts})[:3])})"
                    if covered
                    else ""
                )
            )
            if unexplained:
                return Choice(
                    "reject",
                    note=note + ": it holds information no other concept does",
                    read_segment_ids=sorted(hood.segments_read),
                )
        action = PlannedAction(
            action="archive_concept",
            concept_ids=[cid],
            rationale=f"'{head.title}' archived as conversational noise ({note}): {hood.proposal['rationale']}",
            cited_message_ids=cited,
            proposal_id=hood.proposal["proposal_id"],
            read_segment_ids=sorted(hood.segments_read),
            scores={"proposal_score": score},
        )
        return Choice("act", [action], note, sorted(hood.segments_read))

    def _covered_by_others(
        self, hood: Neighbourhood, cid: str, message_ids: list[str]
    ) -> dict[str, list[str]]:
        """message -> titles of the other live concepts holding evidence in it (as the run's workspace sees
        them: a dry run counts what its earlier would-be actions changed)."""
        out: dict[str, list[str]] = {}
        held = hood.ws.holders(message_ids)
        hood.ws.preload(set().union(*held.values()) - {cid})  # one read, not one per concept
        for message_id, holders in held.items():
            for other in sorted(holders - {cid}):
                concept = hood.ws.concept(other)
                if concept is not None and concept.live:
                    out.setdefault(message_id, []).append(concept.title)
        return out

    # -------------------------------------------------------------------------------------- macro
    def _macro_concept(self, hood: Neighbourhood) -> Choice:
        hub = hood.proposal["concept_ids"][0]
        if not live(hood, hub):
            return Choice("stale", note=stale_note(hood) or "")
        head = hood.concepts[hub]
        score = hood.proposal["score"]
        note = f"score {score:.2f}"
        if score < self.rules.macro_accept:
            texts = self._read(hood, hub)
            named = sum(names_concept(t, head) for t in texts)
            note += f", ambiguous; read {len(texts)} source segment(s): {named} name '{head.title}'"
            if not texts or named / len(texts) < 0.5:
                return Choice(
                    "reject",
                    note=note + ": not a recurring name",
                    read_segment_ids=sorted(hood.segments_read),
                )
        read = sorted(hood.segments_read)
        actions = []
        refine = self._refine_hub(hood, hub)
        if refine is not None:
            actions.append(refine)
        actions += self._hub_relations(hood, hub)
        for a in actions:
            a.read_segment_ids = read
        if not actions:
            return Choice(
                "reject",
                note=note + ": nothing to refine and no explicitly evidenced relation",
                read_segment_ids=read,
            )
        return Choice("act", actions, note, read)

    def _refine_hub(self, hood: Neighbourhood, hub: str) -> PlannedAction | None:
        head = hood.concepts[hub]
        ms = hood.mentions.get(hub, [])
        if not ms:
            return None
        own = normalise_name(head.title)
        names = Counter(
            n.strip() for m in ms for n in (m["title"], *m["aliases"]) if normalise_name(n) not in ("", own)
        )
        # the messages behind the new names / the majority type: what the refinement rests on
        cited_for = {m["message_id"] for m in ms if normalise_name(m["title"]) != own or m["aliases"]}
        aliases = merge_aliases(
            head.title, head.aliases, [n for n, _ in names.most_common(self.rules.hub_alias_limit)]
        )
        changes: dict = {}
        reasons = []
        if aliases != head.aliases:
            changes["aliases"] = aliases
            reasons.append(f"aliases its mentions used ({', '.join(aliases[len(head.aliases) :][:5])})")
        kind = majority_type([m["type"] for m in ms])
        if kind and kind != head.type:
            changes["type"] = kind
            reasons.append(f"type {kind} (most of its {len(ms)} mentions)")
        cited = [m for m in hood.evidence_messages(hub) if m in cited_for][:4] or hood.evidence_messages(
            hub, 3
        )
        if not changes:
            return None
        return PlannedAction(
            action="refine_concept",
            concept_ids=[hub],
            rationale=f"hub '{head.title}' refined from its own evidence: " + "; ".join(reasons) + ".",
            cited_message_ids=cited[:4],
            proposal_id=hood.proposal["proposal_id"],
            changes=changes,
            scores={"proposal_score": hood.proposal["score"]},
        )

    def _hub_relations(self, hood: Neighbourhood, hub: str) -> list[PlannedAction]:
        head = hood.concepts[hub]
        members = (hood.proposal.get("payload") or {}).get("members", [])
        out = []
        for member in members:
            if len(out) >= self.rules.max_relations_per_hub:
                break
            row = hood.ws.concept(member)
            if row is None or not row.live:
                continue
            if any(r.target_id == hub for r in row.relations):
                continue
            evidence = [e["message_id"] for e in hood.ws.evidence(member)]
            texts = message_texts(hood.store, evidence)
            naming = next((m for m in evidence if names_concept(texts.get(m, ""), head)), None)
            if naming is None:
                continue
            out.append(
                PlannedAction(
                    action="create_relation",
                    concept_ids=[member, hub],
                    relation="instance_of",
                    confidence=round(min(0.9, max(0.3, row.confidence)), 4),
                    rationale=f"'{row.title}' is an instance of the hub '{head.title}': its evidence message "
                    f"{naming} names it.",
                    cited_message_ids=[naming],
                    proposal_id=hood.proposal["proposal_id"],
                    scores={"proposal_score": hood.proposal["score"]},
                )
            )
        return out
