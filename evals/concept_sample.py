"""A random sample of a built corpus's live concepts with their evidence, for a person to read (issue 14's
"20 random concepts with their evidence, before/after").

    python -m evals.concept_sample --home DIR --corpus NAME [--n 20] [--seed 0] [--out FILE.md]

Prints the corpus's figures first (concepts, mentions per concept, the weak share, how many rest on one
piece of evidence), then per sampled concept its type, state, confidence, support and every evidence span
with the message it was cut from. Read-only: it opens the stores and writes nothing but `--out`.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from sqlalchemy import func, select

from memory_core.store.db import CorpusStore, MemoryHome
from memory_core.store.schema import canonical_concepts, concept_evidence, mentions, messages

QUOTE_CHARS = 160


def corpus_figures(store: CorpusStore) -> dict:
    cc = canonical_concepts.c
    with store.staging.connect() as conn:
        live = conn.execute(select(cc.state, cc.support_count).where(cc.merged_into.is_(None))).all()
        linked = conn.execute(select(func.count(func.distinct(concept_evidence.c.mention_id)))).scalar_one()
        total_mentions = conn.execute(select(func.count()).select_from(mentions)).scalar_one()
    live = [r for r in live if r.state != "archived"]
    n = len(live) or 1
    return {
        "concepts": len(live),
        "mentions": total_mentions,
        "linked_mentions": linked,
        "mentions_per_concept": round(linked / n, 2),
        "weak_share": round(sum(r.state == "weak" for r in live) / n, 3),
        "single_support_share": round(sum((r.support_count or 0) <= 1 for r in live) / n, 3),
    }


def sample_concepts(store: CorpusStore, n: int, seed: int) -> list[dict]:
    """`n` live concepts drawn with `seed`, each with its evidence spans and the messages they come from."""
    cc, ce = canonical_concepts.c, concept_evidence.c
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(cc.concept_id, cc.title, cc.type, cc.state, cc.confidence, cc.support_count)
            .where(cc.merged_into.is_(None), cc.state != "archived")
            .order_by(cc.concept_id)
        ).all()
        picked = random.Random(seed).sample(rows, min(n, len(rows)))
        ids = [r.concept_id for r in picked]
        evidence = conn.execute(select(ce.concept_id, ce.message_id, ce.text, ce.status).where(ce.concept_id.in_(ids))).all()  # fmt: skip
    with store.source.connect() as conn:
        wanted = list({e.message_id for e in evidence})
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text).where(messages.c.message_id.in_(wanted))).all())  # fmt: skip
    out = []
    for r in sorted(picked, key=lambda r: r.title.lower()):
        spans = [
            {"span": e.text, "status": e.status, "message": _cut(texts.get(e.message_id, ""))}
            for e in evidence
            if e.concept_id == r.concept_id
        ]
        out.append({**r._asdict(), "evidence": spans})
    return out


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def render(name: str, figures: dict, concepts: list[dict]) -> str:
    lines = [f"### {name}", "", " · ".join(f"{k} {v}" for k, v in figures.items()), ""]
    lines += ["| concept | type | state | confidence | support | evidence (span — message) |", "|---|---|---|---|---|---|"]  # fmt: skip
    for c in concepts:
        ev = "<br>".join(f"“{e['span']}” — {e['message']}" + ("" if e["status"] == "active" else f" ({e['status']})") for e in c["evidence"])  # fmt: skip
        cell = ev.replace("|", "/")
        lines.append(f"| {c['title'].replace('|', '/')} | {c['type']} | {c['state']} | {c['confidence']:.2f} | {c['support_count']} | {cell} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default=None, help="heading (default: home and corpus)")
    parser.add_argument("--out", default=None, help="append the markdown here too")
    args = parser.parse_args(argv)
    store = MemoryHome.resolve(args.home).corpus(args.corpus, readonly=True)
    if not store.exists():
        raise SystemExit(f"corpus {args.corpus!r} is not built in {args.home}")
    text = render(args.label or f"{args.corpus} in {args.home}", corpus_figures(store), sample_concepts(store, args.n, args.seed))  # fmt: skip
    print(text)
    if args.out:
        with open(Path(args.out), "a", encoding="utf-8") as fp:
            fp.write(text + "\n")


if __name__ == "__main__":
    main()
