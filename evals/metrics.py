"""Retrieval metrics at k = 1, 5, 10 and their means, overall and per question type.

recall_any@k: some relevant item in the top k; recall_all@k: all of them; recall_frac@k: the share of them;
NDCG@k with binary relevance (ideal DCG over min(k, #relevant) hits). Turn-level rankings are first reduced to
the benchmark's documents (LongMemEval: user turns), as the benchmarks' own scorers do.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from evals.datasets import Haystack, Question

KS = (1, 5, 10)
METRICS = ("recall_any", "recall_all", "recall_frac", "ndcg")
LEVELS = ("turn", "session")


def score_ranking(
    ranked: Sequence[str], relevant: frozenset[str] | set[str], ks: Iterable[int] = KS
) -> dict[str, float]:
    if not relevant:
        raise ValueError("a ranking is scored against at least one relevant id")
    out: dict[str, float] = {}
    for k in ks:
        top = list(ranked[:k])
        hits = [item in relevant for item in top]
        found = relevant & set(top)
        dcg = sum(1.0 / math.log2(rank + 2) for rank, hit in enumerate(hits) if hit)
        idcg = sum(1.0 / math.log2(rank + 2) for rank in range(min(k, len(relevant))))
        out[f"recall_any@{k}"] = float(any(hits))
        out[f"recall_all@{k}"] = float(len(found) == len(relevant))
        out[f"recall_frac@{k}"] = len(found) / len(relevant)
        out[f"ndcg@{k}"] = dcg / idcg
    return out


def score_question(
    haystack: Haystack, question: Question, ranked_turns: Sequence[str], ranked_sessions: Sequence[str]
) -> dict[str, dict[str, float]]:
    """{"turn": ..., "session": ...} for a retrieval-scored question; a level without relevant items is absent."""
    out: dict[str, dict[str, float]] = {}
    if question.relevant_turns:
        documents = [t for t in ranked_turns if t in haystack.scored_turn_ids]
        out["turn"] = score_ranking(documents, question.relevant_turns)
    if question.relevant_sessions:
        out["session"] = score_ranking(list(ranked_sessions), question.relevant_sessions)
    return out


def mean_table(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = rows[0].keys()
    table = {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys}
    table["n"] = len(rows)
    return table


def summarise(scored: Iterable[tuple[str, str, dict[str, dict[str, float]]]]) -> dict:
    """(method, question_type, per-level scores) rows → {method: {level: {"overall", "by_type": {type: ...}}}}."""
    rows: dict[str, dict[str, dict[str, list]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for method, qtype, levels in scored:
        for level, values in levels.items():
            rows[method][level]["__all__"].append(values)
            rows[method][level][qtype].append(values)
    out: dict = {}
    for method, levels in rows.items():
        out[method] = {}
        for level in LEVELS:
            if level not in levels:
                continue
            groups = levels[level]
            out[method][level] = {
                "overall": mean_table(groups["__all__"]),
                "by_type": {t: mean_table(v) for t, v in sorted(groups.items()) if t != "__all__"},
            }
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
