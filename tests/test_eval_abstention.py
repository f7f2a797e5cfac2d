"""`python -m evals.qa.abstention`: the offline agent's answer-or-abstain decisions over corpora the real pipeline
built from a LoCoMo-shaped conversation, per threshold."""

from __future__ import annotations

import json

from evals.qa.abstention import Decisions, main
from tests.conftest import write_json
from tests.eval_samples import locomo_sample


def test_decisions_count_the_right_call_for_each_kind_of_question():
    from evals.datasets import Question

    def q(abstention: bool) -> Question:
        return Question("locomo", "x", "5" if abstention else "4", "?", "", "h", abstention=abstention)

    d = Decisions(0.3)
    for abstention, abstained, gold in [(True, True, False), (True, False, False), (False, False, True), (False, True, False), (False, False, False)]:  # fmt: skip
        d.add(q(abstention), abstained, gold)
    row = d.as_dict()
    assert row["right_decisions"] == 3 and row["questions"] == 5
    assert row["adversarial_abstained"] == "1/2" and row["answerable_answered"] == "2/3"
    assert row["answered_citing_gold"] == "1/2" and row["balanced_accuracy"] == round((1 / 2 + 2 / 3) / 2, 4)


def test_abstention_report_over_a_built_conversation(home, tmp_path, capsys):
    data = write_json(tmp_path / "locomo.json", [locomo_sample()])
    out = tmp_path / "abstention.json"
    main(["--data", str(data), "--home", str(home.root), "--split", "all", "--thresholds", "0.3,0.95", "--out", str(out)])  # fmt: skip
    report = json.loads(out.read_text())
    low, high = report["rows"]
    assert report["conversations"] == ["conv-t"] and low["questions"] == high["questions"] == 5
    answered = lambda row: int(row["answerable_answered"].split("/")[0])  # noqa: E731
    assert answered(low) >= 1 and answered(high) < answered(low)  # a higher bar answers less
    assert int(low["answered_citing_gold"].split("/")[0]) >= 1  # "the name of Ann's puppy" cites D1:1
    assert "| 0.95 |" in capsys.readouterr().out
