"""Retrieval metrics at k = 1, 5, 10 and their means, overall and per question type.

recall_any@k: some relevant item in the top k; recall_all@k: all of them; recall_frac@k: the share of them;
NDCG@k with binary relevance (ideal DCG over min(k, #relevant) hits). Turn-level rankings are first reduced to
the benchmark's documents (LongMemEval: user turns), as the benchmarks' own scorers do.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from evals.datasets import Haystack, Question
from memory_core.ingest.benchmarks import parse_lme_date, parse_locomo_date

KS = (1, 5, 10)
METRICS = ("recall_any", "recall_all", "recall_frac", "ndcg")
LEVELS = ("turn", "session")
# questions whose evidence turns were told in sessions of different dates (a fact told, then updated):
# `latest_first` = 1 when the latest-told evidence turn ranks above every earlier-told one (0 when it is not
# retrieved at all); scored apart from the levels
UPDATE_LEVEL = "update"


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
    """{"turn": ..., "session": ..., "update": ...} for a retrieval-scored question; a level without relevant
    items (for "update": without evidence told at different dates) is absent."""
    out: dict[str, dict[str, float]] = {}
    if question.relevant_turns:
        documents = [t for t in ranked_turns if t in haystack.scored_turn_ids]
        out["turn"] = score_ranking(documents, question.relevant_turns)
        latest = latest_first(haystack, question, documents)
        if latest is not None:
            out[UPDATE_LEVEL] = {"latest_first": latest}
    if question.relevant_sessions:
        out["session"] = score_ranking(list(ranked_sessions), question.relevant_sessions)
    return out


def turn_times(haystack: Haystack) -> dict[str, tuple[datetime, int]]:
    """Turn id → (its session's date, its place in the haystack): when each turn was told."""
    parse = parse_lme_date if haystack.benchmark == "longmemeval" else parse_locomo_date
    dates = {sid: parse(text) for sid, text in haystack.session_dates.items()}
    return {
        t.turn_id: (dates[t.session_id], n) for n, t in enumerate(haystack.turns) if dates.get(t.session_id)
    }


def latest_first(haystack: Haystack, question: Question, documents: Sequence[str]) -> float | None:
    """1.0 when the latest-told evidence turn ranks above every evidence turn told on an earlier date, 0.0
    otherwise (also when it is not retrieved); None when the evidence was not told at different dates."""
    when = turn_times(haystack)
    relevant = [t for t in question.relevant_turns if t in when]
    if len({when[t][0] for t in relevant}) < 2:
        return None
    latest = max(relevant, key=lambda t: when[t])
    earlier = [t for t in relevant if when[t][0] < when[latest][0]]
    rank = {t: i for i, t in enumerate(documents)}
    if latest not in rank:
        return 0.0
    return float(all(rank[latest] < rank.get(t, len(documents)) for t in earlier))


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
        for level in (*LEVELS, UPDATE_LEVEL):
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
