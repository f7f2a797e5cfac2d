"""How `query_memory` retrieves: path weights over the registry's defaults, paths switched off, pool sizes.

    RetrievalSettings().with_weights(speaker=0.0)           # a path kept but not fused
    RetrievalSettings().without("concept", "topic", "graph")  # paths that do not run at all (`memory_flat`)

A path with weight 0 still runs (a later path may read what it leaves: topic → concept); a path switched off
does not, and leaves nothing. Every name is a registry path name (`memory_query.paths.PATH_NAMES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from memory_query.paths import PATH_NAMES, REGISTRY, Phase, RetrievalPath


class UnknownPathError(ValueError):
    """A setting names a retrieval path the registry does not have."""


def _check_names(names) -> None:
    unknown = sorted(set(names) - set(PATH_NAMES))
    if unknown:
        raise UnknownPathError(
            f"unknown retrieval path(s) {', '.join(unknown)}; the paths are {', '.join(PATH_NAMES)}"
        )


@dataclass(frozen=True)
class RetrievalSettings:
    weights: Mapping[str, float] = field(default_factory=dict)  # path name → weight, over the defaults
    off: frozenset[str] = frozenset()  # paths that do not run
    dense_pool: int = 200  # nearest messages / segments taken from each vector index
    concept_pool: int = 50
    concepts_used: int = 30  # concepts whose evidence is scored
    topics_used: int = 3
    context_seeds: int = 5  # strongest messages whose neighbours in time get the graph boost
    path_floor: float = 0.05  # a path "found" a message when its normalised score is at least this
    # topic entry: a nearest topic lends its RELATED_TO concepts this share of (similarity × link weight);
    # on LoCoMo conv-26 (tune) 0.5 cost 0.01 recall_frac@5 against 0.1: topics are broad, the question's
    # own words say more
    topic_route_share: float = 0.1
    # graph synthesis: the message after a question among the strongest ones (its answer) gets this multiple
    # of the question's share (its other neighbour in time the plain share)
    answer_share: float = 2.0
    # typed entry: a concept of a type the question asks about ("When did …" → event) scores (1 + this)
    # times as much; chosen on LoCoMo conv-26 (tune), see `memory_query.question_types`
    concept_type_boost: float = 1.0
    # the concept path's vector share beside its lexical half (a concept's lexical document holds its evidence
    # messages in context); on LoCoMo conv-26 (tune), recall_frac@5 0.7133 / 0.7200 / 0.7200 / 0.7200 at
    # 0.5 / 0.4 / 0.3 / 0.2, and of the three tied 0.4 has the best ndcg@10 (0.6238 / 0.6229 / 0.6226)
    concept_vector_share: float = 0.4
    # the concept path's last step: a concept with at least this many visible evidence messages lends its
    # score by their closeness to the question (0: every evidence message all of it); chosen on the tune side
    # of both dev sets (evals/README, "A hub concept's evidence ranked by the question")
    concept_evidence_ranked_from: int = 3

    def __post_init__(self) -> None:
        _check_names([*self.weights, *self.off])

    def weight(self, name: str) -> float:
        default = next(p.weight for p in REGISTRY if p.name == name)
        return float(self.weights.get(name, default))

    def runs(self, name: str) -> bool:
        return name not in self.off

    def paths(self, phase: Phase | None = None) -> list[RetrievalPath]:
        """The registry paths that run (of one phase), in registry order."""
        return [p for p in REGISTRY if p.name not in self.off and (phase is None or p.phase == phase)]

    def with_weights(self, **weights: float) -> RetrievalSettings:
        return replace(self, weights={**self.weights, **{k: float(v) for k, v in weights.items()}})

    def without(self, *names: str) -> RetrievalSettings:
        return replace(self, off=self.off | frozenset(names))

    def describe(self) -> dict:
        """The fused paths with their weights, and those switched off (for eval method configs)."""
        return {
            "paths": {p.name: self.weight(p.name) for p in self.paths()},
            "off": [name for name in PATH_NAMES if name in self.off],
        }
