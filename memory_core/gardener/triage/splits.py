"""Split candidates: concepts whose evidence falls in two groups (docs/architecture.md §4.10 split_candidates).

A concept's distinct evidence texts are cut in two by average-linkage clustering on cosine similarity,
lowered between items said by disjoint groups of people; the cut is scored by how much closer items are
inside a group than across. An entity's evidence is expected to be varied (different facts about one
thing), so an entity is only a candidate when the two groups are also said by different people (a homonym:
two pets called Max); other types are candidates on separation alone.
"""

from __future__ import annotations

import numpy as np

from memory_core.gardener.proposals import ScoredProposal
from memory_core.gardener.triage.inventory import Inventory
from memory_core.gardener.triage.scoring import TriageConfig, clamp, quoted


def bipartition(similarity: np.ndarray) -> np.ndarray:
    """Labels 0/1 of an average-linkage cut of a similarity matrix into two clusters."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    distance = np.clip(1.0 - similarity, 0.0, 2.0)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="average")
    return fcluster(tree, t=2, criterion="maxclust") - 1


def _medoid(vectors: np.ndarray) -> int:
    return int(np.argmax((vectors @ vectors.T).sum(axis=1)))


def _people_disjoint(people: list[frozenset[str]]) -> np.ndarray:
    """Pairs of items said by two non-empty, disjoint groups of people."""
    groups = sorted(set(people), key=sorted)
    index = [groups.index(p) for p in people]
    table = np.array([[bool(a and b and not a & b) for b in groups] for a in groups], dtype=bool)
    return table[np.ix_(index, index)]


def split_candidates(inv: Inventory, cfg: TriageConfig, excluded: set[str]) -> list[ScoredProposal]:
    """Concepts whose (distinct) evidence texts fall in two groups. An entity's evidence is expected to be
    varied (different facts about one thing), so an entity is only split when the two groups are also said
    by different people (a homonym: two pets called Max); other types split on separation alone."""
    out = []
    for cid, r in inv.concepts.items():
        # only concepts whose whole evidence was read: Phase 1 must be able to hand out every item
        if cid in excluded or r.evidence_total != len(r.evidence):
            continue
        keys = list(dict.fromkeys(e.key for e in r.evidence))  # repeated texts would inflate the groups
        n = len(keys)
        if n < cfg.split_min_evidence:
            continue
        vectors = inv.evidence_vectors[cid][
            [next(i for i, e in enumerate(r.evidence) if e.key == k) for k in keys]
        ]
        raw = vectors @ vectors.T
        people = [
            frozenset().union(
                *[inv.participants.get(e.conversation_id, frozenset()) for e in r.evidence if e.key == k]
            )
            for k in keys
        ]
        labels = bipartition(raw - cfg.split_people_penalty * _people_disjoint(people))
        sizes = np.bincount(labels, minlength=2)
        if sizes.min() < cfg.split_min_cluster:
            continue
        same = labels[:, None] == labels[None, :]
        off_diagonal = ~np.eye(n, dtype=bool)
        within = float(raw[same & off_diagonal].mean())
        across = float(raw[~same].mean())
        purity = float(raw[off_diagonal].mean())
        group_people = [frozenset().union(*[people[i] for i in range(n) if labels[i] == k]) for k in (0, 1)]
        disjoint = bool(group_people[0] and group_people[1] and not group_people[0] & group_people[1])
        separation = min(1.0, max(0.0, within - across) / cfg.split_full_separation)
        if r.concept.type == "entity":
            score = clamp(0.5 + 0.5 * separation) if disjoint else 0.0
        else:
            score = clamp(0.7 * separation + (0.3 if disjoint else 0.0))
        if score < cfg.split_min_score:
            continue
        clusters = []
        for k in (0, 1):
            idx = [i for i in range(n) if labels[i] == k]
            group_keys = {keys[i] for i in idx}
            items = [e for e in r.evidence if e.key in group_keys]
            label = keys[idx[_medoid(vectors[idx])]]
            clusters.append(
                {
                    "mention_ids": [e.mention_id for e in items],
                    "message_ids": list(dict.fromkeys(e.message_id for e in items)),
                    "people": sorted(group_people[k]),
                    "label": label.split(": ", 1)[-1],
                }
            )
        clusters.sort(key=lambda c: (-len(c["mention_ids"]), c["mention_ids"][0]))
        cited = []
        for c in clusters:
            cited += c["message_ids"][: max(1, cfg.max_cited // 2)]
        who = (
            f"; said by different people ({', '.join(clusters[0]['people'])} vs {', '.join(clusters[1]['people'])})"
            if disjoint
            else ""
        )
        out.append(
            ScoredProposal(
                "split",
                [cid],
                score,
                f"{quoted(r.concept.title)} ({r.concept.type}) holds two groups of evidence: {len(clusters[0]['mention_ids'])} like "
                f"“{clusters[0]['label'][:90]}” and {len(clusters[1]['mention_ids'])} like "
                f"“{clusters[1]['label'][:90]}”; cosine {within:.2f} inside the groups vs {across:.2f} across "
                f"(purity {purity:.2f}){who}.",
                cited,
                {
                    "clusters": clusters,
                    "within": round(within, 4),
                    "across": round(across, 4),
                    "purity": round(purity, 4),
                    "disjoint_people": disjoint,
                },
            )
        )
    return out
