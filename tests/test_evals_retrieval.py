"""`memory-os eval retrieval` end to end on small records: output contract, the flat baselines, agreement with
the independent scorer, and the memory method's adapter over a corpus the real pipeline built."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from evals.contract import ContractError, disagreements, validate_output
from evals.datasets import load_longmemeval
from evals.harness import run_retrieval
from evals.retrievers.memory import MemoryResultError, MemoryRetriever, benchmark_ids, evidence_message_ids
from memory_cli.main import cli
from memory_core.store.schema import messages
from tests.conftest import SHARED_DATA, write_json
from tests.eval_samples import lme_file_records, lme_question, locomo_sample

SCORER = SHARED_DATA.parent / "tools" / "score_retrievals.py"


def eval_retrieval(home, *args):
    return CliRunner().invoke(
        cli, ["--home", str(home.root), "eval", "retrieval", *args], catch_exceptions=False
    )


def lines(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "retrievals.jsonl").read_text().splitlines()]


def independent_scores(benchmark: str, data: Path, retrievals: Path) -> dict:
    if not SCORER.exists():
        pytest.skip(f"{SCORER} not present")
    done = subprocess.run(
        [sys.executable, SCORER.name, benchmark, str(data), str(retrievals)],
        cwd=SCORER.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def assert_agrees(report: dict, independent: dict) -> None:
    assert disagreements(report, independent) == []
    assert all(figures["answered"] > 0 for figures in independent.values())
    method = next(iter(independent))
    tampered = json.loads(json.dumps(independent))
    tampered[method]["turn"]["ndcg@5"] += 0.01
    assert disagreements(report, tampered) == [
        f"{method} turn ndcg@5: scorer {tampered[method]['turn']['ndcg@5']}, report {report['methods'][method]['turn']['overall']['ndcg@5']}"
    ]


def test_longmemeval_baselines_contract_and_independent_scorer(home, tmp_path):
    data = write_json(tmp_path / "lme.json", lme_file_records())
    out = tmp_path / "out"
    result = eval_retrieval(
        home,
        "--benchmark",
        "longmemeval",
        "--data",
        str(data),
        "--out",
        str(out),
        "--methods",
        "bm25,dense,bm25_user,dense_user",
        "--embedder",
        "hashing",
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"bm25: turn recall_any@5 1\.000 recall_all@5 1\.000", result.output)
    methods = ["bm25", "dense", "bm25_user", "dense_user"]
    report = validate_output(out, "longmemeval", methods, {"q_multi", "q_multi_abs", "q_asst"})
    assert report["counts"] == {
        "haystacks": 3,
        "turns": 24,
        "questions": 3,
        "scored_turn_level": 1,
        "scored_session_level": 1,
        "not_scored_abstention": 1,
        "not_scored_no_evidence": 1,
        "loader_notes": 3,
    }
    by = {(r["method"], r["question_id"]): r for r in lines(out)}
    bm25 = by[("bm25", "q_multi")]
    assert set(bm25["ranked_turns"][:2]) == {"answer_s1_0", "answer_s2_2"}  # "beagle Rufus" + "Denver"
    assert bm25["ranked_sessions"][:2] in (["answer_s1", "answer_s2"], ["answer_s2", "answer_s1"])
    assert len(bm25["ranked_turns"]) == 8 and len(bm25["ranked_sessions"]) == 3  # all turns, both roles
    user_only = by[("bm25_user", "q_multi")]["ranked_turns"]
    assert (
        all(t in {"answer_s1_0", "s_noise_0", "answer_s2_0", "answer_s2_2"} for t in user_only)
        and len(user_only) == 4
    )
    assert report["methods"]["dense"]["build"]["counts_median"]["turns_indexed"] == 8
    assert (
        report["method_config"]["dense_user"]["turn_vectors_memo"]["hits"] == 12
    )  # the user turns, embedded once
    # the shared persistent cache: 3 haystacks with the same 8 turns, computed once
    cache = report["method_config"]["dense"]["embedding_cache"]
    assert (cache["requested"], cache["cache_hits"], cache["computed"]) == (24, 16, 8)
    assert "| overall | bm25 | 1 |" in (out / "report.md").read_text()
    assert_agrees(report, independent_scores("longmemeval", data, out / "retrievals.jsonl"))


def test_locomo_baselines_and_independent_scorer(home, tmp_path):
    data = write_json(tmp_path / "locomo.json", [locomo_sample("conv-a"), locomo_sample("conv-b")])
    out = tmp_path / "out"
    result = eval_retrieval(
        home,
        "--benchmark",
        "locomo",
        "--data",
        str(data),
        "--out",
        str(out),
        "--methods",
        "bm25,dense",
        "--embedder",
        "hashing",
        "--limit",
        "1",
    )
    assert result.exit_code == 0, result.output
    report = validate_output(out, "locomo", ["bm25", "dense"], {f"conv-a:{i}" for i in range(5)})
    assert report["methods"]["bm25"]["turn"]["overall"]["n"] == 3
    assert "recall_frac@5" in (out / "report.md").read_text()
    first = next(r for r in lines(out) if r["method"] == "bm25" and r["question_id"] == "conv-a:0")
    assert (
        first["ranked_turns"][0] == "D1:1"
        and first["ranked_sessions"] == ["S1", "S2"]
        and first["question_type"] == "4"
    )
    assert_agrees(report, independent_scores("locomo", data, out / "retrievals.jsonl"))


def test_clear_errors(home, tmp_path, monkeypatch):
    data = write_json(tmp_path / "locomo.json", [locomo_sample()])
    runner = CliRunner()
    base = [
        "--home",
        str(home.root),
        "eval",
        "retrieval",
        "--benchmark",
        "locomo",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "o"),
    ]
    out = runner.invoke(cli, [*base, "--methods", "bm25_user"])
    assert out.exit_code == 2 and "LoCoMo scores every dialog turn" in out.output
    out = runner.invoke(cli, [*base, "--methods", "bm25,nope"])
    assert out.exit_code == 2 and "unknown method(s) nope" in out.output
    out = runner.invoke(cli, [*base, "--question-ids", "conv-t:99"])
    assert out.exit_code == 2 and "unknown question id" in out.output
    monkeypatch.setitem(sys.modules, "memory_query", None)  # the read side absent, whatever the checkout has
    out = runner.invoke(cli, base)  # default methods include memory
    assert (
        out.exit_code == 2
        and "memory_query.query_memory" in out.output
        and "--methods bm25,dense" in out.output
    )
    assert not (tmp_path / "o" / "retrievals.jsonl").exists()  # failed before any work


def test_contract_validation_catches_breaks(home, tmp_path):
    data = write_json(tmp_path / "locomo.json", [locomo_sample()])
    out = tmp_path / "out"
    assert (
        eval_retrieval(
            home, "--benchmark", "locomo", "--data", str(data), "--out", str(out), "--methods", "bm25"
        ).exit_code
        == 0
    )
    validate_output(out, "locomo", ["bm25"])
    with pytest.raises(ContractError, match="no retrievals for method dense"):
        validate_output(out, "locomo", ["bm25", "dense"])
    rows = lines(out)
    rows[0]["ranked_turns"] = rows[0]["ranked_turns"] + rows[0]["ranked_turns"][:1]
    rows[1].pop("question_type")
    (out / "retrievals.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(ContractError, match="repeats an id"):
        validate_output(out, "locomo", ["bm25"])


# ------------------------------------------------------------------------------------------ memory adapter
def keyword_query(question, store, k, as_of=None, settings=None, pool=None):
    """A test's own read side: messages ranked by shared words with the question (newest first on ties),
    returned in the shape query_memory documents (items with message_id); settings and pool unused."""
    words = set(re.findall(r"[a-z]+", question.lower()))
    with store.source.connect() as conn:
        rows = conn.execute(select(messages.c.message_id, messages.c.text, messages.c.created_at)).all()
    if as_of is not None:
        rows = [r for r in rows if r.created_at <= as_of]
    ranked = sorted(
        rows,
        key=lambda r: (-len(words & set(re.findall(r"[a-z]+", r.text.lower()))), -r.created_at.timestamp()),
    )
    return {"items": [{"message_id": r.message_id, "score": 1.0} for r in ranked[:k]]}


def test_memory_method_maps_pipeline_messages_to_benchmark_ids(home, tmp_path):
    from evals.pipeline import eval_corpus_name, pipeline_corpus_builder

    data = write_json(tmp_path / "lme.json", lme_file_records()[:1])
    haystacks = load_longmemeval(data)
    retriever = MemoryRetriever(pipeline_corpus_builder(home, "longmemeval", str(data)), keyword_query)
    run = run_retrieval("longmemeval", data, haystacks, [retriever], tmp_path / "out")
    (line,) = lines(tmp_path / "out")
    assert line["method"] == "memory"
    assert (
        line["ranked_turns"][0] == "answer_s2_2"
    )  # "my beagle Rufus ... to Denver": the pipeline's message, by source_ref
    assert set(line["ranked_turns"]) == {t.turn_id for t in haystacks[0].turns}
    assert line["ranked_sessions"][0] == "answer_s2" and set(line["ranked_sessions"]) == {
        "answer_s1",
        "s_noise",
        "answer_s2",
    }
    stages = run.report["methods"]["memory"]["build"]["stages"]
    assert {"messages", "segments"} <= set(stages)  # per-asset build time from the Dagster run
    assert run.report["methods"]["memory"]["turn"]["overall"]["recall_any@1"] == 1.0
    store = home.corpus(eval_corpus_name("longmemeval", "q_multi"))
    with pytest.raises(MemoryResultError, match="not in corpus"):
        benchmark_ids(store, ["not-a-message-id"], "longmemeval")


def test_memory_flat_asks_the_corpus_memory_built_without_the_hierarchy(home, tmp_path):
    """memory and memory_flat through the real read side: one build per haystack, and memory_flat's ranking is
    query_memory's with the concept, topic and graph paths switched off."""
    from evals.methods import make_retrievers
    from evals.pipeline import eval_corpus_name, pipeline_corpus_builder
    from memory_query import RetrievalSettings, query_memory

    data = write_json(tmp_path / "lme.json", lme_file_records()[:1])
    haystacks = load_longmemeval(data)
    built = []

    def builder():
        build = pipeline_corpus_builder(home, "longmemeval", str(data))

        def counted(haystack):
            built.append(haystack.haystack_id)
            return build(haystack)

        return counted

    methods = ["memory", "memory_flat", "memory_structure"]
    retrievers = make_retrievers(methods, "longmemeval", corpus_builder=builder)
    run_retrieval("longmemeval", data, haystacks, retrievers, tmp_path / "out")
    assert built == ["q_multi"]
    ranked = {r["method"]: r["ranked_turns"] for r in lines(tmp_path / "out")}
    store = home.corpus(eval_corpus_name("longmemeval", "q_multi"))
    question = haystacks[0].questions[0]
    flat = RetrievalSettings().without("concept", "topic", "graph")
    structure = RetrievalSettings().without("lexical", "session", "dense_message", "dense_segment", "speaker")
    for method, settings in (("memory", None), ("memory_flat", flat), ("memory_structure", structure)):
        answer = query_memory(question.question, store, 50, as_of=question.as_of, settings=settings)
        assert (
            ranked[method] == benchmark_ids(store, evidence_message_ids(answer), "longmemeval").ranked_turns
        )
        found = {p for i in answer.items for p in i.channel_scores}
        assert ("concept" in found) is (settings is not flat), method
        assert ("lexical" in found) is (settings is not structure), method


def test_memory_adapter_locomo_sessions_and_result_shapes(home, tmp_path):
    from evals.pipeline import pipeline_corpus_builder

    data = write_json(tmp_path / "locomo.json", [locomo_sample()])
    (haystack,) = __import__("evals.datasets", fromlist=["load_locomo"]).load_locomo(data)
    corpus = pipeline_corpus_builder(home, "locomo", str(data))(haystack)
    with corpus.store.source.connect() as conn:
        ids = dict(conn.execute(select(messages.c.source_ref, messages.c.message_id)).all())
    result = benchmark_ids(corpus.store, [ids["D2:2"], ids["D1:1"], ids["D2:1"]], "locomo")
    assert result.ranked_turns == ["D2:2", "D1:1", "D2:1"] and result.ranked_sessions == ["S2", "S1"]

    class Item:
        def __init__(self, message_id=None, message_ids=()):
            self.message_id, self.message_ids = message_id, list(message_ids)

    class Result:
        items = [Item("m1"), Item(message_ids=["m2", "m1"]), Item()]

    assert evidence_message_ids(Result()) == ["m1", "m2"]
    assert evidence_message_ids([{"message_id": "m3"}]) == ["m3"]
    assert evidence_message_ids({"evidence": [{"message_ids": ["m4"]}]}) == ["m4"]
    with pytest.raises(MemoryResultError, match="without ranked evidence"):
        evidence_message_ids("<direct_evidence/>")


@pytest.mark.slow
@pytest.mark.shared_data
def test_ci_smoke_on_real_dev_data(tmp_path):
    """The CI smoke (BM25 only here: fast) on 2 LongMemEval questions and 1 LoCoMo conversation of ../shared/data."""
    from evals.ci_smoke import main
    from tests.conftest import needs_shared_data

    shared = needs_shared_data()
    assert main(["--shared", str(shared), "--out", str(tmp_path), "--methods", "bm25"]) == 0
    report = json.loads((tmp_path / "longmemeval" / "report.json").read_text())
    assert report["counts"]["questions"] == 2 and report["methods"]["bm25"]["turn"]["overall"]["n"] >= 1
    assert json.loads((tmp_path / "locomo" / "report.json").read_text())["counts"]["questions"] == 199


def test_cli_memory_method_through_the_pipeline(home, tmp_path, monkeypatch):
    """`--methods memory,bm25` with a read side present: corpora built by the pipeline in the memory home,
    the memory lines in the same contract, asked at the question date."""
    from memory_query import ReaderPool, RetrievalSettings

    asked, pools = [], set()

    def query_memory(question, store, k, as_of=None, settings=None, pool=None):
        asked.append((store.name, k, as_of, settings.describe()["off"]))
        pools.add(id(pool))
        return keyword_query(question, store, k, as_of)

    read_side = types.SimpleNamespace(
        query_memory=query_memory, ReaderPool=ReaderPool, RetrievalSettings=RetrievalSettings
    )
    monkeypatch.setitem(sys.modules, "memory_query", read_side)
    data = write_json(tmp_path / "lme.json", lme_file_records())
    out = tmp_path / "out"
    result = eval_retrieval(
        home,
        "--benchmark",
        "longmemeval",
        "--data",
        str(data),
        "--out",
        str(out),
        "--methods",
        "memory,memory_flat,bm25",
        "--limit",
        "2",
    )
    assert result.exit_code == 0, result.output
    report = validate_output(
        out, "longmemeval", ["memory", "memory_flat", "bm25"], {"q_multi", "q_multi_abs"}
    )
    asked_at = datetime(2023, 5, 30, 23, 59, 59)  # question_date 23:40, asked at the end of its day
    flat = ["topic", "concept", "graph"]
    assert asked == [
        ("eval-longmemeval__q_multi", 50, asked_at, []),
        ("eval-longmemeval__q_multi", 50, asked_at, flat),
        ("eval-longmemeval__q_multi_abs", 50, asked_at, []),
        ("eval-longmemeval__q_multi_abs", 50, asked_at, flat),
    ]
    assert len(pools) == 1  # one reader pool for the run's memory methods
    # memory_flat asks the corpora memory built: no build of its own
    assert (
        report["methods"]["memory"]["build"]["stages"]
        and not report["methods"]["memory_flat"]["build"]["stages"]
    )
    assert report["method_config"]["memory_flat"]["off"] == flat
    assert "concept" in report["method_config"]["memory"]["paths"]
    assert "concept" not in report["method_config"]["memory_flat"]["paths"]
    assert {r["name"] for r in home.registrations()} == {
        "eval-longmemeval__q_multi",
        "eval-longmemeval__q_multi_abs",
    }
    assert report["methods"]["memory"]["turn"]["overall"]["recall_all@5"] == 1.0
    assert report["method_config"]["memory"]["query"].endswith("query_memory")


def test_build_floor_benchmark_runs(home, tmp_path, capsys):
    from evals.benchmarks.bench_build_floor import main

    data = write_json(tmp_path / "lme.json", lme_file_records()[:1])
    this_code = Path(__file__).resolve().parents[1]  # as its own baseline: the same concepts and topics
    argv = ["--data", str(data), "--repeats", "1", "--embedder", "hashing", "--baseline-code", str(this_code)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (
        "haystack q_multi: 8 turns" in printed and "x the floor" in printed and "messages: median" in printed
    )
    identical = next(line for line in printed.splitlines() if "outputs identical to the baseline's" in line)
    assert "canonical_concepts': True" in identical and "False" not in identical
    assert "'purity': " in printed and "concepts_sampled" in printed


def test_ablation_variants_name_registry_paths():
    from evals.ablate import parse_variant
    from memory_query.settings import UnknownPathError

    name, settings = parse_variant("flat:-concept,-topic,-graph,speaker=0.2,dense_pool=100")
    assert name == "flat" and settings.off == {"concept", "topic", "graph"}
    assert settings.weight("speaker") == 0.2 and settings.weight("lexical") == 1.0
    assert settings.dense_pool == 100 and isinstance(settings.dense_pool, int)
    assert [p.name for p in settings.paths()] == [
        "lexical",
        "session",
        "dense_message",
        "dense_segment",
        "speaker",
        "current_facts",
    ]
    assert parse_variant("base")[1].describe() == parse_variant("base:")[1].describe()
    with pytest.raises(UnknownPathError, match="unknown retrieval path"):
        parse_variant("old:dense=0")


def test_the_dev_split_is_a_stable_partition_of_haystack_ids():
    from evals.splits import in_split, split_of

    ids = [f"q{i}" for i in range(200)]
    tune, confirm = in_split(ids, "tune", key=str), in_split(ids, "confirm", key=str)
    assert sorted(tune + confirm) == sorted(ids) and not set(tune) & set(confirm)
    assert 60 < len(tune) < 140  # a hash, not a prefix of the file
    assert in_split(ids, "all", key=str) == ids
    assert [split_of(i) for i in ids] == [split_of(i) for i in ids]
    assert split_of("conv-26") == "tune" and split_of("conv-41") == "confirm"


def test_latest_first_asks_whether_the_latest_told_evidence_ranks_above_the_earlier(tmp_path):
    from evals.datasets import load_longmemeval
    from evals.metrics import latest_first, score_question, summarise

    [haystack] = load_longmemeval(write_json(tmp_path / "lme.json", [lme_question()]))
    question = haystack.questions[0]
    # evidence told on 1 May (answer_s1_0) and on 10 May (answer_s2_2): the 10 May turn is the latest
    assert latest_first(haystack, question, ["answer_s2_2", "s_noise_0", "answer_s1_0"]) == 1.0
    assert latest_first(haystack, question, ["answer_s1_0", "answer_s2_2"]) == 0.0
    assert latest_first(haystack, question, ["answer_s1_0", "s_noise_0"]) == 0.0  # not retrieved at all
    levels = score_question(haystack, question, ["answer_s2_2", "answer_s1_0"], ["answer_s2", "answer_s1"])
    assert levels["update"] == {"latest_first": 1.0}
    assert summarise([("m", question.question_type, levels)])["m"]["update"]["overall"] == {
        "latest_first": 1.0,
        "n": 1,
    }
    # evidence told in one session only: not a question about an update
    once = lme_question("q_once")
    once["haystack_sessions"][0][0]["has_answer"] = False
    [single] = load_longmemeval(write_json(tmp_path / "once.json", [once]))
    assert latest_first(single, single.questions[0], ["answer_s2_2"]) is None


def test_a_rescore_by_split_scores_each_side_and_the_whole_as_the_report_does(home, tmp_path):
    from evals.rescore import rescore
    from evals.splits import split_of

    data = write_json(tmp_path / "locomo.json", [locomo_sample("conv-a"), locomo_sample("conv-b")])
    out = tmp_path / "out"
    args = ["--benchmark", "locomo", "--data", str(data), "--out", str(out), "--methods", "bm25"]
    assert eval_retrieval(home, *args, "--embedder", "hashing").exit_code == 0
    turn = rescore("locomo", data, out, by="split")["bm25"]["turn"]
    report = json.loads((out / "report.json").read_text())["methods"]["bm25"]["turn"]["overall"]
    assert turn["overall"]["recall_frac@5"] == pytest.approx(report["recall_frac@5"], abs=1e-4)
    sides = {split_of("conv-a"), split_of("conv-b")}
    assert set(turn["by_type"]) == sides
    assert turn["overall"]["n"] == report["n"] == sum(turn["by_type"][s]["n"] for s in sides)
