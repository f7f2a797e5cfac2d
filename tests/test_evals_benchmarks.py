"""Benchmark loaders and the retrieval metrics, on small records written by the tests."""

from __future__ import annotations

import math
import os
import pkgutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from evals.datasets import load_benchmark, load_locomo, load_longmemeval, select
from evals.metrics import percentile, score_question, score_ranking, summarise
from evals.retrievers.base import sessions_by_best_turn
from memory_core.errors import InputError
from tests.conftest import write_json
from tests.eval_samples import lme_file_records, locomo_sample


@pytest.fixture
def lme(tmp_path):
    return load_longmemeval(write_json(tmp_path / "lme.json", lme_file_records()))


@pytest.fixture
def locomo(tmp_path):
    return load_locomo(write_json(tmp_path / "locomo.json", [locomo_sample()]))


def test_longmemeval_ids_labels_and_skips(lme):
    multi, abstention, assistant_only = lme
    assert multi.session_ids == ["answer_s1", "s_noise", "answer_s2"]
    # turn index within the session, both roles counted; the blank user turn is not indexed but still a document
    assert [t.turn_id for t in multi.turns] == [
        "answer_s1_0",
        "answer_s1_1",
        "s_noise_0",
        "s_noise_1",
        "answer_s2_0",
        "answer_s2_1",
        "answer_s2_2",
        "answer_s2_3",
    ]
    assert multi.scored_turn_ids == {"answer_s1_0", "s_noise_0", "s_noise_2", "answer_s2_0", "answer_s2_2"}
    assert any("s_noise_2 is empty" in n for n in multi.notes)
    q = multi.questions[0]
    assert q.relevant_turns == {
        "answer_s1_0",
        "answer_s2_2",
    }  # the has_answer assistant turn is not a document
    assert q.relevant_sessions == {"answer_s1", "answer_s2"}
    # asked at the end of the question's day: the benchmark dates days, not the hours within its own day
    assert q.question_date == "2023/05/30 (Tue) 23:40" and q.as_of == datetime(2023, 5, 30, 23, 59, 59)
    assert q.retrieval_scored and not q.abstention
    assert abstention.questions[0].abstention and not abstention.questions[0].retrieval_scored
    assert not assistant_only.questions[0].retrieval_scored and not assistant_only.questions[0].abstention


def test_longmemeval_evidence_told_later_on_the_question_day_is_visible(tmp_path):
    rec = lme_file_records()[0]
    rec["question_date"] = "2023/05/30 (Tue) 13:45"
    rec["haystack_dates"][-1] = "2023/05/30 (Tue) 14:45"  # the evidence session, an hour "after" asking
    (h,) = load_longmemeval(write_json(tmp_path / "late.json", [rec]))
    q = h.questions[0]
    late = datetime(2023, 5, 30, 14, 45)
    assert q.as_of is not None and late <= q.as_of < datetime(2023, 5, 31)


def test_longmemeval_repeated_session_keeps_the_first(tmp_path):
    rec = lme_file_records()[0]
    rec["haystack_session_ids"].append("s_noise")
    rec["haystack_dates"].append("2023/05/11 (Thu) 08:00")
    rec["haystack_sessions"].append(rec["haystack_sessions"][1])
    (h,) = load_longmemeval(write_json(tmp_path / "dup.json", [rec]))
    assert h.session_ids == ["answer_s1", "s_noise", "answer_s2"]
    assert len(h.turns) == 8 and any("repeats" in n for n in h.notes)


def test_locomo_ids_documents_and_malformed_evidence(locomo):
    (h,) = locomo
    assert h.session_ids == ["S1", "S2"] and h.session_dates["S2"] == "10:00 am on 9 June, 2023"
    assert h.scored_turn_ids == {"D1:1", "D1:2", "D1:3", "D2:1", "D2:2"}
    bob = next(t for t in h.turns if t.turn_id == "D1:2")
    assert (
        bob.role == "assistant"
        and bob.document
        == 'Bob said, "Congrats! Here is my cat." and shared a photo of a grey cat on a sofa.'
    )
    q = {x.question_id: x for x in h.questions}
    assert list(q) == ["conv-t:0", "conv-t:1", "conv-t:2", "conv-t:3", "conv-t:4"]
    assert q["conv-t:1"].relevant_turns == {"D1:1", "D2:2"} and q["conv-t:1"].relevant_sessions == {
        "S1",
        "S2",
    }
    assert q["conv-t:1"].question_type == "1"
    assert any("'D'" in n for n in h.notes)
    assert q["conv-t:3"].abstention and not q["conv-t:3"].retrieval_scored  # category 5
    assert not q["conv-t:4"].retrieval_scored  # no evidence


def test_select_and_bad_input(tmp_path, lme, locomo):
    assert [h.haystack_id for h in select(lme, limit=2)] == ["q_multi", "q_multi_abs"]
    assert [q.question_id for h in select(locomo, question_ids=["conv-t:2"]) for q in h.questions] == [
        "conv-t:2"
    ]
    assert (
        len(select(locomo, question_ids=["conv-t"])[0].questions) == 5
    )  # a sample id picks its conversation
    with pytest.raises(InputError, match="unknown question id"):
        select(lme, limit=1, question_ids=["q_asst"])
    with pytest.raises(InputError, match="not a LoCoMo sample"):
        load_benchmark("locomo", write_json(tmp_path / "x.json", [{"a": 1}]))
    broken = lme_file_records()[0]
    broken["haystack_dates"].pop()
    with pytest.raises(InputError, match="record 'q_multi' is malformed"):
        load_benchmark("longmemeval", write_json(tmp_path / "z.json", [broken]))
    sample = locomo_sample()
    del sample["conversation"]["session_2"][0]["dia_id"]
    with pytest.raises(InputError, match="record 'conv-t' is malformed.*dia_id"):
        load_benchmark("locomo", write_json(tmp_path / "w.json", [sample]))
    with pytest.raises(InputError, match="JSON list"):
        load_benchmark("longmemeval", write_json(tmp_path / "y.json", {"a": 1}))


def test_score_ranking_by_hand():
    s = score_ranking(["a", "x", "b", "y"], {"a", "b"})
    assert s["recall_any@1"] == 1.0 and s["recall_all@1"] == 0.0 and s["recall_frac@1"] == 0.5
    assert s["recall_all@5"] == 1.0 and s["recall_frac@5"] == 1.0
    assert s["ndcg@1"] == 1.0
    assert math.isclose(s["ndcg@5"], (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert score_ranking([], {"a"})["ndcg@10"] == 0.0
    with pytest.raises(ValueError):
        score_ranking(["a"], set())


def test_turn_level_counts_only_documents(lme):
    multi = lme[0]
    q = multi.questions[0]
    # assistant turns ahead of the relevant user turns are not documents: they do not push them down
    levels = score_question(
        multi, q, ["answer_s1_1", "answer_s2_2", "answer_s2_3", "answer_s1_0"], ["answer_s2", "answer_s1"]
    )
    assert (
        levels["turn"]["recall_all@1"] == 0.0
        and levels["turn"]["recall_all@5"] == 1.0
        and levels["turn"]["ndcg@5"] == 1.0
    )
    assert levels["session"]["recall_all@5"] == 1.0
    table = summarise([("bm25", q.question_type, levels), ("bm25", "other", {"turn": levels["turn"]})])
    assert table["bm25"]["turn"]["overall"]["n"] == 2 and table["bm25"]["session"]["overall"]["n"] == 1
    assert set(table["bm25"]["turn"]["by_type"]) == {"multi-session", "other"}


def test_sessions_by_best_turn_and_percentile():
    assert sessions_by_best_turn(["s2", "s1", "s2", "s3"], 50) == ["s2", "s1", "s3"]
    assert sessions_by_best_turn(["s2", "s1", "s2", "s3"], 2) == ["s2", "s1"]
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5 and percentile([5.0], 95) == 5.0


def test_scripts_run_by_path_shadow_no_standard_module():
    # `python evals/x.py` puts evals/ first on sys.path: a module there named like a standard one (it once was
    # `tokenize.py`) breaks every script of the folder at import
    root = Path(__file__).resolve().parents[1]
    for folder in ("evals", "evals/benchmarks", "scripts"):
        names = {p.stem for p in (root / folder).glob("*.py")} | {
            p.name for p in (root / folder).iterdir() if (p / "__init__.py").exists()
        }
        assert not names & set(sys.stdlib_module_names), (folder, names & set(sys.stdlib_module_names))


def test_every_benchmark_starts_as_a_module(tmp_path):
    """`python -m evals.benchmarks.<name> --help` (the README's commands) from outside the repository, for
    every module of the folder, and the extraction gold scorer."""
    import evals.benchmarks

    root = Path(__file__).resolve().parents[1]
    names = [f"evals.benchmarks.{m.name}" for m in pkgutil.iter_modules(evals.benchmarks.__path__)]
    assert "evals.benchmarks.bench_query" in names
    for name in [n for n in names if n != "evals.benchmarks.common"] + ["evals.extraction_gold"]:
        done = subprocess.run(
            [sys.executable, "-m", name, "--help"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert done.returncode == 0, (name, done.stderr[-2000:])
        assert "usage:" in done.stdout, name


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="posix_fadvise: Linux")
def test_the_cold_reader_benchmark_drops_the_index_files_and_times_both_readers(built_demo):
    """bench_cold_reader's worker on a built corpus: the index files it drops and reads back are the
    corpus's own, and the cold and warm passes time the same questions."""
    from evals.benchmarks import bench_cold_reader

    home, name = built_demo
    files = bench_cold_reader._index_files(home.corpus(name).dir / "indexes")
    assert any(p.name == "index.faiss" for p in files) and any(p.suffix == ".npz" for p in files)
    out = bench_cold_reader.worker(str(home.root), name, queries=5, seed=0)
    assert out["first_ms"] > 0
    for side in ("cold", "warm"):
        figures = out[side]
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["max_ms"]


def test_the_pattern_benchmark_finds_the_same_close_facts_both_ways():
    """bench_consolidation --patterns-only on small memories: the kept-rows search and the per-fact
    baseline find the same close facts in the same order (and some are found)."""
    from evals.benchmarks.bench_consolidation import pattern_scaling

    figures = pattern_scaling(sizes=(500, 2000), dim=32, candidates=40)
    assert all(f["same_close_facts"] and f["close_facts"] > 0 for f in figures.values())
    assert figures[2000]["related_facts_median"] > figures[500]["related_facts_median"] > 0
