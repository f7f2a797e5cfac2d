"""Phase 0 offline scoring of a read-only `Inventory`: proposals, and the merge, hub and noise categories.

- merge: pairs of type-compatible live concepts sharing a name or close in embedding space, scored
  `w_emb · cos(evidence centroids) + w_lex · name overlap + w_ctx · shared context` (same segment > same
  conversation > the same people speaking); accepted pairs are grouped around the best-supported concept.
- split: see `splits.py` (two evidence clusters inside one concept).
- macro_concept: a well-supported concept spread over many topics (or conversations when no topics were
  built) that other concepts' titles name: a hub ("HeartScan", "LGBTQ").
- noise: a title that is a conversational formula or an artefact (see `noise.py`), weighted up when the
  concept rests on one weak mention.

Every proposal carries a score in [0, 1], the source message ids it rests on and a rationale in words.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from memory_core.concepts.names import normalise_name
from memory_core.gardener.common import COMPATIBLE_TYPES, compatible
from memory_core.gardener.proposals import ScoredProposal
from memory_core.gardener.triage.inventory import ConceptRecord, EvidenceItem, Inventory
from memory_core.gardener.triage.noise import template_counts, title_signals
from memory_core.ontology.lifecycle import LifecycleProposals


@dataclass(frozen=True)
class TriageConfig:
    max_evidence: int = 64  # evidence items per concept read and embedded (a deterministic sample)
    max_cited: int = 6  # source message ids cited per proposal
    # merge
    # re-tuned on the issue-14 concepts (LoCoMo conv-26, the tune side): restatements now attach in the loop,
    # so what is left at 0.60-0.74 were distinct events told alike (two camping trips, two photos); the
    # duplicates left score 0.82+
    merge_min_score: float = 0.75
    merge_min_cosine: float = 0.80  # a pair found by embedding alone (no shared name) needs this cosine
    merge_neighbours: int = 5
    merge_weights: tuple[float, float, float] = (0.45, 0.35, 0.20)  # embedding, lexical, context
    max_merge_group: int = 6
    max_name_block: int = 50  # a name shared by more concepts identifies nothing
    compatible_types: tuple[str, ...] = COMPATIBLE_TYPES
    # split
    split_min_evidence: int = 4
    split_min_cluster: int = 2
    split_min_score: float = 0.55
    split_people_penalty: float = 0.25
    split_full_separation: float = 0.30  # within − across cosine at which separation scores 1
    # macro concepts
    macro_min_support: int = 3
    macro_min_spread: int = 3
    macro_spread_ref: int = 6
    macro_support_ref: int = 12
    macro_members_ref: int = 5
    macro_min_score: float = 0.60
    # noise
    noise_min_score: float = 0.60
    weak_single_weight: float = 0.30
    template_min_concepts: int = 4  # 3 flagged distinct photo events ("<P> shared a photo of a group")

    def compatible(self, a: str, b: str) -> bool:
        return compatible(a, b, self.compatible_types)


def manifest(proposals: list[ScoredProposal]) -> LifecycleProposals:
    by = defaultdict(list)
    for p in proposals:
        by[p.category].append(p.as_model())
    return LifecycleProposals(
        merge_candidates=by["merge"],
        split_candidates=by["split"],
        macro_concept_candidates=by["macro_concept"],
        noise_candidates=by["noise"],
    )


def clamp(x: float) -> float:
    return round(min(1.0, max(0.0, float(x))), 4)


def _cite(items: list[EvidenceItem], limit: int) -> list[str]:
    """Message ids of the items, spread over conversations first (one per conversation, then more)."""
    by_conversation: dict[str, list[str]] = defaultdict(list)
    for e in items:
        if e.message_id not in by_conversation[e.conversation_id]:
            by_conversation[e.conversation_id].append(e.message_id)
    out: list[str] = []
    depth = 0
    while len(out) < limit and any(len(v) > depth for v in by_conversation.values()):
        for ids in by_conversation.values():
            if len(ids) > depth and ids[depth] not in out and len(out) < limit:
                out.append(ids[depth])
        depth += 1
    return out


def quoted(title: str) -> str:
    return f"'{title}'"


# ----------------------------------------------------------------------------------------------- noise
def noise_signals(inv: Inventory, cfg: TriageConfig) -> dict[str, list]:
    """concept -> the noise signals of its title (only concepts with at least one)."""
    names = {n for people in inv.participants.values() for n in people}
    templates = template_counts(
        {cid: [r.concept.title, *r.concept.aliases] for cid, r in inv.concepts.items()}, names
    )
    out = {}
    for cid, r in inv.concepts.items():
        signals = title_signals(
            r.concept.title,
            templates,
            names,
            inv.lowercase_counts,
            inv.midsentence_capital_counts,
            cfg.template_min_concepts,
        )
        if signals:
            out[cid] = signals
    return out


def noise_candidates(
    inv: Inventory, cfg: TriageConfig, signals_by_concept: dict[str, list]
) -> list[ScoredProposal]:
    out = []
    for cid, signals in signals_by_concept.items():
        r = inv.concepts[cid]
        weak_single = r.concept.support_count <= 1 and r.concept.state == "weak"
        score = clamp(sum(s.weight for s in signals) + (cfg.weak_single_weight if weak_single else 0.0))
        if score < cfg.noise_min_score:
            continue
        reasons = [s.detail for s in signals]
        if weak_single:
            reasons.append(f"it rests on a single weak mention (confidence {r.concept.confidence:.2f})")
        out.append(
            ScoredProposal(
                "noise",
                [cid],
                score,
                f"{quoted(r.concept.title)} ({r.concept.type}, {r.concept.support_count} evidence) looks like conversational noise: "
                + "; ".join(reasons)
                + ".",
                _cite(r.evidence, cfg.max_cited),
                {"signals": [s.code for s in signals], "weak_single_mention": weak_single},
            )
        )
    return out


# ----------------------------------------------------------------------------------------------- merge
def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def _context(inv: Inventory, a: ConceptRecord, b: ConceptRecord) -> tuple[float, str]:
    if a.segments & b.segments:
        return 1.0, "evidence in the same segment"
    if a.conversations & b.conversations:
        return 0.75, "evidence in the same conversation"
    pa, pb = inv.people(a), inv.people(b)
    if pa and pb:
        overlap = len(pa & pb) / len(pa | pb)
        if overlap:
            return 0.5 * overlap, f"the same people speaking ({', '.join(sorted(pa & pb))})"
        return 0.0, f"different people speaking ({', '.join(sorted(pa))} vs {', '.join(sorted(pb))})"
    return 0.25, "no named speakers to compare"


def _lexical(a: ConceptRecord, b: ConceptRecord) -> tuple[float, str]:
    shared = a.names & b.names
    if shared:
        return 1.0, f"shared name {sorted(shared)[0]!r}"
    ta, tb = set(normalise_name(a.concept.title).split()), set(normalise_name(b.concept.title).split())
    if not ta or not tb:
        return 0.0, "no shared name"
    jaccard = len(ta & tb) / len(ta | tb)
    return round(jaccard, 4), f"title word overlap {jaccard:.2f}"


def _share_a_word(a: ConceptRecord, b: ConceptRecord) -> bool:
    words_a = {w for n in a.names for w in n.split()}
    return any(w in words_a for n in b.names for w in n.split())


def _candidate_pairs(inv: Inventory, cfg: TriageConfig, excluded: set[str]) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    by_name: dict[str, list[str]] = defaultdict(list)
    for cid, r in inv.concepts.items():
        if cid not in excluded:
            for name in r.names:
                by_name[name].append(cid)
    for ids in by_name.values():
        if 1 < len(ids) <= cfg.max_name_block:
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    pairs.add((min(a, b), max(a, b)))
    ids = inv.concept_ids
    vectors = inv.concept_vectors
    k = min(cfg.merge_neighbours + 1, len(ids))
    for start in range(0, len(ids), 1024):  # a block of rows at a time: memory stays O(block × n)
        sims = vectors[start : start + 1024] @ vectors.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k else np.zeros((len(sims), 0), int)
        for row, neighbours in enumerate(top):
            a = ids[start + row]
            if a in excluded:
                continue
            for j in neighbours:
                b = ids[j]
                if b != a and b not in excluded and sims[row, j] >= cfg.merge_min_cosine:
                    pairs.add((min(a, b), max(a, b)))
    return pairs


def _canonical_order(r: ConceptRecord) -> tuple:
    return (-r.concept.support_count, -r.concept.confidence, r.concept.first_seen, r.concept_id)


def merge_candidates(inv: Inventory, cfg: TriageConfig, excluded: set[str]) -> list[ScoredProposal]:
    w_emb, w_lex, w_ctx = cfg.merge_weights
    accepted: dict[tuple[str, str], dict] = {}
    for a_id, b_id in sorted(_candidate_pairs(inv, cfg, excluded)):
        a, b = inv.concepts[a_id], inv.concepts[b_id]
        if not cfg.compatible(a.concept.type, b.concept.type):
            continue
        if a.segments & b.segments and not _share_a_word(a, b):
            # the extractor told them apart in the very same context ("Dune" by "Frank Herbert"): neighbours
            continue
        emb = _cos(inv.centroid(a_id), inv.centroid(b_id))
        lex, lex_note = _lexical(a, b)
        ctx, ctx_note = _context(inv, a, b)
        score = clamp(w_emb * max(emb, 0.0) + w_lex * lex + w_ctx * ctx)
        if score < cfg.merge_min_score or (lex < 0.5 and emb < cfg.merge_min_cosine):
            continue
        accepted[(a_id, b_id)] = {
            "score": score,
            "cosine": round(emb, 4),
            "lexical": lex,
            "context": round(ctx, 4),
            "notes": f"evidence cosine {emb:.2f}, {lex_note}, {ctx_note}",
        }
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for a_id, b_id in accepted:
        parent[find(a_id)] = find(b_id)
    groups: dict[str, list[str]] = defaultdict(list)
    for cid in {c for pair in accepted for c in pair}:
        groups[find(cid)].append(cid)
    out = []
    for members in groups.values():
        canonical = min(members, key=lambda c: _canonical_order(inv.concepts[c]))
        linked = []
        for other in members:
            pair = accepted.get((min(canonical, other), max(canonical, other)))
            if other != canonical and pair:
                linked.append((other, pair))
        # the strongest links first; a member only reachable through another member waits for the next run
        linked.sort(key=lambda x: (-x[1]["score"], x[0]))
        linked = linked[: cfg.max_merge_group - 1]
        if not linked:
            continue
        head = inv.concepts[canonical]
        ids = [canonical, *[o for o, _ in linked]]
        cited: list[str] = []
        for cid in ids:
            cited += [m for m in _cite(inv.concepts[cid].evidence, 2) if m not in cited]
        parts = [
            f"{quoted(inv.concepts[o].concept.title)} ({inv.concepts[o].concept.type}, {inv.concepts[o].concept.support_count} evidence): "
            f"{p['notes']}"
            for o, p in linked
        ]
        out.append(
            ScoredProposal(
                "merge",
                ids,
                min(p["score"] for _, p in linked),
                f"likely duplicates of {quoted(head.concept.title)} ({head.concept.type}, {head.concept.support_count} evidence): "
                + "; ".join(parts)
                + ".",
                cited[: max(cfg.max_cited, len(ids))],
                {"canonical": canonical, "pairs": {o: p for o, p in linked}},
            )
        )
    return out


# ----------------------------------------------------------------------------------------------- macro


def _naming_index(inv: Inventory) -> tuple[dict[str, set[str]], dict[str, str]]:
    postings: dict[str, set[str]] = defaultdict(set)
    texts: dict[str, str] = {}
    for cid, r in inv.concepts.items():
        text = " " + " | ".join(normalise_name(n) for n in (r.concept.title, *r.concept.aliases)) + " "
        texts[cid] = text
        for token in set(text.split()):
            postings[token].add(cid)
    return postings, texts


def members_naming(
    inv: Inventory, hub: ConceptRecord, postings: dict[str, set[str]], texts: dict[str, str]
) -> list[str]:
    """Other live concepts whose title or an alias names the hub (whole words): "Harry Potter party" is a
    case of "Harry Potter"; a concept merely mentioning it in its description is not. Duplicates aside."""
    found: set[str] = set()
    for name in hub.names:
        words = name.split()
        if not words or len(name) < 3:
            continue
        ids = set.intersection(*[postings.get(w, set()) for w in words])
        found |= {c for c in ids if f" {name} " in texts[c]}
    found.discard(hub.concept_id)
    return sorted(c for c in found if not (inv.concepts[c].names & hub.names))


def macro_candidates(inv: Inventory, cfg: TriageConfig, excluded: set[str]) -> list[ScoredProposal]:
    postings, texts = _naming_index(inv)
    out = []
    for cid, r in inv.concepts.items():
        if cid in excluded or r.concept.support_count < cfg.macro_min_support:
            continue
        by_topic = inv.has_topics and bool(r.topics)
        spread = len(r.topics) if by_topic else len(r.conversations)
        if spread < cfg.macro_min_spread:
            continue
        members = members_naming(inv, r, postings, texts)
        score = clamp(
            0.5 * min(1.0, spread / cfg.macro_spread_ref)
            + 0.3 * min(1.0, r.concept.support_count / cfg.macro_support_ref)
            + 0.2 * min(1.0, len(members) / cfg.macro_members_ref)
        )
        if score < cfg.macro_min_score:
            continue
        kind = "topics" if by_topic else "conversations"
        named_by = ", ".join(quoted(inv.concepts[m].concept.title) for m in members[:5])
        out.append(
            ScoredProposal(
                "macro_concept",
                [cid],
                score,
                f"{quoted(r.concept.title)} ({r.concept.type}) is a hub: {r.concept.support_count} evidence across {spread} {kind}"
                + (f", named by {len(members)} other concepts ({named_by})" if members else "")
                + ".",
                _cite(r.evidence, cfg.max_cited),
                {
                    "spread": spread,
                    "spread_kind": kind,
                    "members": members[:50],
                    "topics": sorted(inv.topic_labels.get(t, t) for t in r.topics)[:20],
                },
            )
        )
    return out
