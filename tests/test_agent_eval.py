"""The `agent` eval method over corpora the real pipeline built (shared with `memory`: one build per haystack),
and `eval qa --method agent` through the real `openai` client against the local chat-completions server."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from evals.datasets import load_longmemeval
from evals.harness import run_retrieval
from evals.methods import make_retrievers
from evals.pipeline import eval_corpus_name, pipeline_corpus_builder
from evals.retrievers.memory import benchmark_ids
from memory_cli.main import cli
from memory_query.api import ask
from tests.conftest import write_json
from tests.eval_samples import lme_file_records


def test_agent_method_ranks_the_submitted_evidence_over_the_memory_corpora(home, tmp_path):
    data = write_json(tmp_path / "lme.json", lme_file_records()[:2])
    haystacks = load_longmemeval(data)
    retrievers = make_retrievers(
        ["memory", "agent"],
        "longmemeval",
        corpus_builder=lambda: pipeline_corpus_builder(home, "longmemeval", str(data)),
    )
    run = run_retrieval("longmemeval", data, haystacks, retrievers, tmp_path / "out")
    # the agent reads the corpora memory built: no build of its own
    assert (
        run.report["methods"]["memory"]["build"]["stages"]
        and not run.report["methods"]["agent"]["build"]["stages"]
    )
    lines = [json.loads(x) for x in (tmp_path / "out" / "retrievals.jsonl").read_text().splitlines()]
    ranked = {(r["question_id"], r["method"]): r["ranked_turns"] for r in lines}
    store = home.corpus(eval_corpus_name("longmemeval", "q_multi"))
    question = haystacks[0].questions[0]
    answer = ask(question.question, store, as_of=question.as_of)
    assert (
        ranked[("q_multi", "agent")]
        == benchmark_ids(store, answer.ranked_message_ids, "longmemeval").ranked_turns
    )
    config = run.report["method_config"]["agent"]
    assert config["driver"] == "offline" and config["questions"] == 2
    assert 3 <= config["steps"]["median"] <= config["steps"]["max"] <= 6
    assert run.report["methods"]["agent"]["turn"]["overall"]["n"] == 1


def test_eval_qa_agent_method_answers_through_the_llm_driver(home, tmp_path, monkeypatch):
    """The agent answerer (LLM driver) and the judge through one local chat-completions server; the corpus
    was built offline first (with a key set, the build itself would use the LLM teacher)."""
    from evals.qa.agent import agent_answerer
    from evals.qa.llm import ChatModel
    from evals.qa.run import run_qa
    from evals.retrievers.memory import PipelineCorpus
    from tests.test_evals_qa import FakeChatServer

    data = write_json(tmp_path / "lme.json", lme_file_records()[:2])
    haystacks = load_longmemeval(data)
    build = pipeline_corpus_builder(home, "longmemeval", str(data))
    stores = {h.haystack_id: build(h).store for h in haystacks}

    def script(body: dict):
        if body.get("response_format") or body.get("tools"):
            return 200, _agent_answer(body)
        text = "\n".join(m["content"] for m in body["messages"])
        response = text.split("Model response:")[1]
        return 200, "yes" if ("Denver" in response or "no evidence" in response) else "no"

    with FakeChatServer(script) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-agent")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        answerer = agent_answerer(home, lambda h: PipelineCorpus(stores[h.haystack_id]), "agent-m")
        summary = run_qa(
            "longmemeval", haystacks, answerer, ChatModel.from_environment("judge-m"), tmp_path / "qa"
        )
        roles = [
            "ScoutOut" if r.get("tools") else r["response_format"]["json_schema"]["name"]
            for r in server.requests
            if r.get("response_format") or r.get("tools")
        ]
    hypotheses = {h["question_id"]: h["hypothesis"] for h in map(json.loads, (tmp_path / "qa" / "hypotheses.jsonl").read_text().splitlines())}  # fmt: skip
    assert hypotheses == {"q_multi": "Rufus is travelling to Denver.", "q_multi_abs": "Memory holds no evidence that answers this."}  # fmt: skip
    assert (
        summary["answerer"] == "agent" and summary["driver"] == "llm" and summary["overall"]["score"] == 1.0
    )
    assert roles[:4] == ["PlanOut", "ScoutOut", "ScoutOut", "SynthesisOut"]


def test_eval_qa_agent_method_without_a_key_is_one_clear_error(home, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = write_json(tmp_path / "lme.json", lme_file_records())
    args = [
        "--benchmark",
        "longmemeval",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "qa"),
        "--method",
        "agent",
    ]
    out = CliRunner().invoke(cli, ["--home", str(home.root), "eval", "qa", *args])
    assert out.exit_code == 2 and "set OPENAI_API_KEY" in out.output
    assert not home.registrations()  # nothing was built


def _agent_answer(body: dict) -> str:
    """The agent's roles, scripted: a lookup plan, one search, the submission of what it found, a cited answer
    (or an abstention for the cat)."""
    # this server has no tool calls: it answers the Scout's tool request with the ScoutOut JSON as text
    name = "ScoutOut" if body.get("tools") else body["response_format"]["json_schema"]["name"]
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if name == "PlanOut":
        return json.dumps(
            {
                "reasoning": "one thing to find",
                "intent": "lookup",
                "sub_questions": [{"label": "main", "text": "beagle Rufus travelling city"}],
                "time_range": {"start": "", "end": "", "label": ""},
                "order": "",
                "measure": "",
                "anchor_event": "",
                "anchor_relation": "",
            }
        )
    if name == "ScoutOut":
        found = re.findall(r"^- ([0-9a-f-]{36}) \(", user, re.M)
        return json.dumps(
            {
                "reasoning": "",
                "tool": "submit_evidence" if found else "smart_search",
                "sub_question": "main",
                "query": "beagle Rufus travelling",
                "in_time_range": False,
                "node_id": "",
                "paths": [],
                "message_id": "",
                "message_ids": found[:3],
                "claim": "where Rufus travels",
            }
        )
    cited = re.findall(r"^\[Source:[0-9a-f-]{36}\]", user, re.M)
    if "cat" in user.split("Question:")[1].split("\n")[0]:
        return json.dumps(
            {"reasoning": "no cat in the evidence", "answer": "", "abstain": True, "gaps": ["a cat"]}
        )
    return json.dumps({"reasoning": "", "answer": f"Rufus is travelling to Denver {cited[0]}.", "abstain": False, "gaps": []})  # fmt: skip
