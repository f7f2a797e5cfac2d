"""Extraction quality against a gold set: precision/recall of spans (any type) and of typed spans, per type
and per conversation style, plus reaction detection and state accuracy. Works for any `Teacher`: what is
scored is what the Semantic Mapper accepts, i.e. what would be stored.

A predicted mention matches a gold one (same message) when their character spans overlap with
intersection-over-union ≥ `iou` (0.5: a clause vs the sentence around it still matches, a name inside a
sentence does not); matching is one-to-one, best overlap first.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

from evals.gold import GoldMessage
from memory_core.extraction.mapper import map_extraction
from memory_core.extraction.teacher import MessageView, SegmentInput, Teacher, speaker_is_person
from memory_core.memory_loop.router import RouterRules
from memory_core.ontology.concepts import NAME_TYPES
from memory_core.ontology.titles import title_noise, words
from memory_core.store.db import utcnow


def iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


def match(
    pred: list[tuple[str, int, int]], gold: list[tuple[str, int, int]], threshold: float, typed: bool
) -> int:
    return len(match_pairs(pred, gold, threshold, typed))


def match_pairs(
    pred: list[tuple[str, int, int]], gold: list[tuple[str, int, int]], threshold: float, typed: bool
) -> list[tuple[int, int]]:
    """One-to-one (predicted, gold) index pairs, best overlap first."""
    pairs = []
    for i, p in enumerate(pred):
        for j, g in enumerate(gold):
            if typed and p[0] != g[0]:
                continue
            overlap = iou((p[1], p[2]), (g[1], g[2]))
            if overlap >= threshold:
                pairs.append((overlap, i, j))
    used_p, used_g, out = set(), set(), []
    for _, i, j in sorted(pairs, reverse=True):
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            out.append((i, j))
    return out


def title_f1(predicted: str, gold: str) -> float:
    """Token F1 of two titles (lower case, words only): how close a teacher's title is to the gold one."""
    p, g = words(predicted), words(gold)
    common = sum((Counter(p) & Counter(g)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def becomes_concept(row: dict) -> bool:
    """Would the memory loop let this mention make or support a concept? Its canonical title passes the
    title contract (`title_noise`) and its confidence the router's floor: what is scored is what the memory
    keeps, junk that ends as a residual is not a prediction."""
    return (
        row["confidence"] >= RouterRules().min_confidence and title_noise(row["title"], row["type"]) is None
    )


def is_hub_mention(row: dict) -> bool:
    """A name-type mention whose evidence is a statement about the thing, not its name ("Caroline" cited by
    "I went to a support group yesterday", "camping" by "We went camping last week"): the teacher's subject
    and theme hubs. The gold sets mark names by their span and facts by their clause, so hubs are counted
    apart, never as a name predicted at a clause."""
    if row["type"] not in NAME_TYPES:
        return False
    surface, title = words(row["surface"]), words(row["title"])
    return len(surface) > len(title) + 2 or not set(title) <= set(surface)


def _prf(tp: int, n_pred: int, n_gold: int) -> dict:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "precision": round(p, 3),
        "recall": round(r, 3),
        "f1": round(f, 3),
        "tp": tp,
        "pred": n_pred,
        "gold": n_gold,
    }


def _view(g: GoldMessage, ref: str) -> MessageView:
    return MessageView(
        ref=ref,
        message_id=g.id,
        role=g.role,
        author=g.author,
        is_person=speaker_is_person(g.role, g.style),
        text=g.text,
        start=0,
        end=len(g.text),
        created_at=g.created_at,
    )


def gold_segment(
    g: GoldMessage, speakers: tuple[str, ...], previous: GoldMessage | None = None
) -> SegmentInput:
    """The segment a message would sit in: a reply shares its round with the user turn before it (as the
    segmenter cuts rounds); only the scored message's mentions are counted."""
    views = (_view(previous, "m1"), _view(g, "m2")) if previous is not None else (_view(g, "m1"),)
    return SegmentInput(f"gold:{g.id}", f"gold:{g.style}", g.style, views, speakers)


def _conversation(g: GoldMessage) -> str:
    return g.id.rsplit("-", 1)[0]


def _round_opener(gold: list[GoldMessage], i: int) -> GoldMessage | None:
    g, prev = gold[i], gold[i - 1] if i else None
    if prev is not None and g.role == "assistant" and prev.role == "user" and prev.style == g.style:
        return prev
    return None


def score_teacher(teacher: Teacher, gold: list[GoldMessage], threshold: float = 0.5) -> dict:
    # the people of one gold conversation (ids "<conversation>-<n>"): who speaks to whom
    speakers_by_conversation: dict[str, set[str]] = defaultdict(set)
    for g in gold:
        if g.style == "locomo":
            speakers_by_conversation[_conversation(g)].add(g.author)
    counts: dict[str, Counter] = defaultdict(Counter)  # scope → tp/pred/gold counters
    reactions = Counter()
    failures: list[dict] = []
    examples: list[dict] = []
    title_scores: list[float] = []
    started = time.perf_counter()
    for i, g in enumerate(gold):
        speakers = tuple(sorted(speakers_by_conversation.get(_conversation(g), ())))
        segment = gold_segment(g, speakers, _round_opener(gold, i))
        result = teacher.extract(segment)
        if result.extraction is None:
            failures.append({"message": g.id, "outcome": result.outcome, "error": result.error})
            mapped_mentions, mapped_reactions = [], []
        else:
            mapped = map_extraction(segment, result.extraction, teacher.extractor, utcnow())
            mapped_mentions, mapped_reactions = mapped.mentions, mapped.reactions
        mapped_mentions = [r for r in mapped_mentions if r["message_id"] == g.id]
        hubs = [r for r in mapped_mentions if is_hub_mention(r)]
        reactions["hub_mentions"] += len(hubs)
        mapped_mentions = [r for r in mapped_mentions if not is_hub_mention(r)]
        screened = [r for r in mapped_mentions if not becomes_concept(r)]
        mapped_mentions = [r for r in mapped_mentions if becomes_concept(r)]
        mapped_reactions = [r for r in mapped_reactions if r["message_id"] == g.id]
        pred = [(r["type"], r["span_start"], r["span_end"]) for r in mapped_mentions]
        gold_spans = [(m.type, m.start, m.end) for m in g.mentions]
        typed_pairs = match_pairs(pred, gold_spans, threshold, typed=True)
        for i, j in typed_pairs:
            if g.mentions[j].title:
                title_scores.append(title_f1(mapped_mentions[i]["title"], g.mentions[j].title))
        for scope in ("all", f"style:{g.style}"):
            counts[scope]["span_tp"] += match(pred, gold_spans, threshold, typed=False)
            counts[scope]["typed_tp"] += len(typed_pairs)
            counts[scope]["pred"] += len(pred)
            counts[scope]["gold"] += len(gold_spans)
        for kind in {p[0] for p in pred} | {m[0] for m in gold_spans}:
            p_k = [p for p in pred if p[0] == kind]
            g_k = [m for m in gold_spans if m[0] == kind]
            counts[f"type:{kind}"]["typed_tp"] += match(p_k, g_k, threshold, typed=True)
            counts[f"type:{kind}"]["pred"] += len(p_k)
            counts[f"type:{kind}"]["gold"] += len(g_k)
        top = sorted(mapped_reactions, key=lambda r: (r["epistemic_status"] != "explicit", -r["intensity"]))
        predicted_state = top[0]["state"] if top else None
        reactions["pred"] += predicted_state is not None
        reactions["gold"] += g.reaction is not None
        reactions["detected"] += predicted_state is not None and g.reaction is not None
        reactions["state_correct"] += predicted_state is not None and predicted_state == g.reaction
        examples.append(
            {
                "message": g.id,
                "predicted": [(t, g.text[a:b]) for t, a, b in pred],
                "titles": [r["title"] for r in mapped_mentions],
                "screened": [(r["type"], r["title"]) for r in screened],
                "gold": [(t, g.text[a:b]) for t, a, b in gold_spans],
                "reaction": [predicted_state, g.reaction],
            }
        )
    seconds = time.perf_counter() - started
    report = {
        "teacher": teacher.describe(),
        "messages": len(gold),
        "iou_threshold": threshold,
        "spans": _prf(counts["all"]["span_tp"], counts["all"]["pred"], counts["all"]["gold"]),
        "typed": _prf(counts["all"]["typed_tp"], counts["all"]["pred"], counts["all"]["gold"]),
        "by_type": {
            k.split(":", 1)[1]: _prf(c["typed_tp"], c["pred"], c["gold"])
            for k, c in sorted(counts.items())
            if k.startswith("type:")
        },
        "by_style": {
            k.split(":", 1)[1]: {
                "spans": _prf(c["span_tp"], c["pred"], c["gold"]),
                "typed": _prf(c["typed_tp"], c["pred"], c["gold"]),
            }
            for k, c in sorted(counts.items())
            if k.startswith("style:")
        },
        "reactions": {
            "detection": _prf(reactions["detected"], reactions["pred"], reactions["gold"]),
            "state_accuracy": round(reactions["state_correct"] / reactions["gold"], 3)
            if reactions["gold"]
            else 0.0,
        },
        # matched fact mentions with a gold title: mean token F1 of the titles, share with F1 >= 0.6
        "titles": {
            "scored": len(title_scores),
            "mean_f1": round(sum(title_scores) / len(title_scores), 3) if title_scores else 0.0,
            "close": round(sum(s >= 0.6 for s in title_scores) / len(title_scores), 3)
            if title_scores
            else 0.0,
        },
        "hub_mentions": reactions["hub_mentions"],  # subject and theme hubs, not scored against the gold
        "teacher_failures": failures,
        "seconds": round(seconds, 3),
        "examples": examples,
    }
    return report
