"""The offline agent's answer-or-abstain decisions on LoCoMo, per abstention threshold.

    python -m evals.qa.abstention --data ../shared/data/locomo/locomo_dev.json --split confirm \
        [--thresholds 0.2,0.3,0.4,0.5] [--out FILE.json]

A question of categories 1–4 has an answer in the conversation: the right decision is to answer; one of
category 5 (adversarial) asks what the conversation never says: the right decision is to abstain. Per
threshold (`OfflineSynthesizer.abstain_below`): how many adversarial questions abstained, how many
answerable ones were answered, the right decisions in all, and of the answered answerable ones how many
cite a gold evidence turn (an answer that cites the turn the benchmark names is at least grounded where the
answer is). Balanced accuracy (the mean of the two rates) is the figure to choose by: never abstaining has
0.5. Choose the threshold on `tune` (conv-26), report `confirm` (conv-30/41/42/43). No LLM, no judge:
the decisions and the citations are what the offline Synthesizer controls.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from evals.datasets import Haystack, Question, load_benchmark
from evals.pipeline import pipeline_corpus_builder
from evals.retrievers.memory import benchmark_ids
from evals.splits import in_split
from memory_core.store.db import CorpusStore, MemoryHome
from memory_query.agent.offline import OfflineDriver
from memory_query.agent.synthesizer import ABSTAIN_BELOW, OfflineSynthesizer
from memory_query.api import ask
from memory_query.pool import ReaderPool


@dataclass
class Decisions:
    threshold: float
    adversarial: int = 0
    abstained_adversarial: int = 0
    answerable: int = 0
    answered: int = 0
    answered_citing_gold: int = 0
    by_category: dict[str, list[int]] = field(default_factory=dict)  # category → [answered, n]

    def add(self, question: Question, abstained: bool, cites_gold: bool) -> None:
        seen = self.by_category.setdefault(question.question_type, [0, 0])
        seen[0] += not abstained
        seen[1] += 1
        if question.abstention:
            self.adversarial += 1
            self.abstained_adversarial += abstained
        else:
            self.answerable += 1
            self.answered += not abstained
            self.answered_citing_gold += (not abstained) and cites_gold

    @property
    def right(self) -> int:
        return self.abstained_adversarial + self.answered

    @property
    def balanced(self) -> float | None:
        """The mean of the two right-decision rates: never abstaining scores 0.5 whatever the mix (on
        LoCoMo a quarter of the questions are adversarial, so the raw share rewards never abstaining)."""
        if not self.adversarial or not self.answerable:
            return None
        return round((self.abstained_adversarial / self.adversarial + self.answered / self.answerable) / 2, 4)

    def as_dict(self) -> dict:
        n = self.adversarial + self.answerable
        return {
            "threshold": self.threshold,
            "questions": n,
            "right_decisions": self.right,
            "right_share": round(self.right / n, 4) if n else None,
            "balanced_accuracy": self.balanced,
            "adversarial_abstained": f"{self.abstained_adversarial}/{self.adversarial}",
            "answerable_answered": f"{self.answered}/{self.answerable}",
            "answered_citing_gold": f"{self.answered_citing_gold}/{self.answered}",
            "answered_by_category": {k: f"{a}/{n}" for k, (a, n) in sorted(self.by_category.items())},
        }


def decide(
    store: CorpusStore, question: Question, driver: OfflineDriver, pool: ReaderPool
) -> tuple[bool, bool]:
    """(abstained, the answer cites a gold evidence turn) for one question."""
    answer = ask(question.question, store, as_of=question.as_of, driver=driver, pool=pool, trace=False)
    cited = [e.message_id for e in answer.evidence if e.citation in answer.answer]
    turns = benchmark_ids(store, cited, "locomo", k=len(cited)).ranked_turns if cited else []
    return answer.abstained, bool(set(turns) & question.relevant_turns)


def measure(
    haystacks: list[Haystack], stores: dict[str, CorpusStore], thresholds: list[float], pool: ReaderPool
) -> list[Decisions]:
    out = []
    for t in thresholds:
        driver = OfflineDriver(synthesizer=OfflineSynthesizer(abstain_below=t))
        decisions = Decisions(t)
        for haystack in haystacks:
            for question in haystack.questions:
                decisions.add(question, *decide(stores[haystack.haystack_id], question, driver, pool))
        out.append(decisions)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo JSON (the dev file)")
    parser.add_argument("--split", choices=("tune", "confirm", "all"), default="confirm")
    parser.add_argument("--thresholds", default=f"0.2,{ABSTAIN_BELOW},0.4,0.5")
    parser.add_argument("--home", default=None, help="memory home (default: the configured one)")
    parser.add_argument("--out", default=None, help="write the table as JSON here too")
    args = parser.parse_args(argv)
    home = MemoryHome.resolve(args.home)
    haystacks = load_benchmark("locomo", args.data)
    if args.split != "all":
        haystacks = in_split(haystacks, args.split)
    build = pipeline_corpus_builder(home, "locomo", args.data)
    stores = {h.haystack_id: build(h).store for h in haystacks}  # an unchanged corpus is not rebuilt
    with ReaderPool(home) as pool:
        rows = [
            d.as_dict()
            for d in measure(haystacks, stores, [float(t) for t in args.thresholds.split(",")], pool)
        ]
    report = {"split": args.split, "conversations": [h.haystack_id for h in haystacks], "chosen": ABSTAIN_BELOW, "rows": rows}  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"split {args.split}: {', '.join(report['conversations'])} (threshold in use {ABSTAIN_BELOW})")
    print("| threshold | right decisions | balanced accuracy | adversarial abstained | answerable answered | answered citing gold |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['threshold']} | {r['right_decisions']}/{r['questions']} ({r['right_share']}) | {r['balanced_accuracy']} | {r['adversarial_abstained']} | {r['answerable_answered']} | {r['answered_citing_gold']} |")  # fmt: skip


if __name__ == "__main__":
    main()
