"""`memory-os eval qa` end to end through the real `openai` client against a local HTTP server speaking the
chat-completions API (scripted answers), plus LoCoMo's token-F1 rules."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from evals.qa.locomo_f1 import F1Scorer
from evals.qa.prompts import judge_prompt
from memory_cli.main import cli
from tests.conftest import write_json
from tests.eval_samples import lme_file_records, locomo_sample


class FakeChatServer:
    """POST /v1/chat/completions on 127.0.0.1: `script(request_json) -> (status, reply text)`; keeps requests."""

    def __init__(self, script):
        self.script = script
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                status, text = server.script(body)
                payload = {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
                }
                data = json.dumps(
                    payload if status == 200 else {"error": {"message": text, "type": "server_error"}}
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def text_of(request: dict) -> str:
    return "\n".join(m["content"] for m in request["messages"])


def lme_script(body: dict):
    text = text_of(body)
    if text.startswith("You are grading"):
        # the judge: right when the response names Denver, or (abstention) says it cannot answer
        response = text.split("Model response:")[1]
        return 200, "yes" if ("Denver" in response or "cannot answer" in response) else "no"
    if "my cat" in text:
        return 200, "I cannot answer that from the history."
    if "Which parks" in text:
        return 400, "maximum context length exceeded"  # a fault the run records (400s are not retried)
    return 200, "Rufus is travelling to Denver."


@pytest.fixture
def llm_env(monkeypatch):
    def use(server: FakeChatServer):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

    return use


def eval_qa(home, *args):
    return CliRunner().invoke(cli, ["--home", str(home.root), "eval", "qa", *args], catch_exceptions=False)


def test_longmemeval_qa_end_to_end_and_resume(home, tmp_path, llm_env):
    data = write_json(tmp_path / "lme.json", lme_file_records())
    out = tmp_path / "qa"
    args = [
        "--benchmark",
        "longmemeval",
        "--data",
        str(data),
        "--out",
        str(out),
        "--method",
        "bm25",
        "--model",
        "reader-m",
        "--judge-model",
        "judge-m",
        "--context-turns",
        "3",
    ]
    with FakeChatServer(lme_script) as server:
        llm_env(server)
        result = eval_qa(home, *args)
        assert result.exit_code == 0, result.output
        hypotheses = [json.loads(x) for x in (out / "hypotheses.jsonl").read_text().splitlines()]
        assert hypotheses == [
            {"question_id": "q_multi", "hypothesis": "Rufus is travelling to Denver."},
            {"question_id": "q_multi_abs", "hypothesis": "I cannot answer that from the history."},
        ]
        report = json.loads((out / "qa_report.json").read_text())
        assert report["answered"] == 2 and report["errors"] == 1 and report["overall"]["score"] == 1.0
        assert report["by_type"]["multi-session"] == {"score": 1.0, "n": 2}
        results = {
            r["question_id"]: r for r in map(json.loads, (out / "qa_results.jsonl").read_text().splitlines())
        }
        assert (
            "BadRequestError" in results["q_asst"]["error"] and "context length" in results["q_asst"]["error"]
        )
        readers = [r for r in server.requests if r["model"] == "reader-m"]
        judges = [r for r in server.requests if r["model"] == "judge-m"]
        assert all(r["path"] == "/v1/chat/completions" and r["temperature"] == 0 for r in server.requests)
        assert all(r["auth"] == "Bearer sk-test-not-a-secret" for r in server.requests)
        first = text_of(readers[0])
        # the reader sees the retrieved evidence, chronologically, with session dates and the time of asking
        assert "[2023/05/01 (Mon) 09:00] user: I adopted a beagle puppy named Rufus" in first
        assert first.index("Rufus last month") < first.index("road trip to Denver")
        assert "Current date: 2023/05/30 (Tue) 23:40" in first
        assert any("correctly identifies the question as unanswerable" in text_of(j) for j in judges)
        asked = len(server.requests)

        result = eval_qa(home, *args)  # resume: only the failed question is asked again
        assert result.exit_code == 0, result.output
        assert {r["model"] for r in server.requests[asked:]} == {"reader-m"}
        assert all("Which parks" in text_of(r) for r in server.requests[asked:])


def test_locomo_qa_uses_token_f1(home, tmp_path, llm_env):
    data = write_json(tmp_path / "locomo.json", [locomo_sample()])
    out = tmp_path / "qa"
    answers = {
        "name of Ann's puppy": "Max",
        "beach": "Malibu",
        "pottery": "in May 2023",
        "Bob's dog": "Not mentioned in the conversation.",
        "sofa": "blue",
    }

    def script(body):
        question = text_of(body).split("Question:")[1]
        return 200, next(a for key, a in answers.items() if key in question)

    with FakeChatServer(script) as server:
        llm_env(server)
        result = eval_qa(
            home, "--benchmark", "locomo", "--data", str(data), "--out", str(out), "--method", "bm25"
        )
        assert result.exit_code == 0, result.output
        assert {r["model"] for r in server.requests} == {"gpt-4o-mini"}  # no judge call for LoCoMo
    scores = {
        r["question_id"]: r["score"]
        for r in map(json.loads, (out / "qa_results.jsonl").read_text().splitlines())
    }
    assert scores == {"conv-t:0": 1.0, "conv-t:1": 0.5, "conv-t:2": 0.8, "conv-t:3": 1.0, "conv-t:4": 0.0}
    assert (out / "retrievals.jsonl").exists()  # the evidence was retrieved in the same run


def test_qa_without_key_is_one_clear_error(home, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = write_json(tmp_path / "lme.json", lme_file_records())
    out = CliRunner().invoke(
        cli,
        [
            "--home",
            str(home.root),
            "eval",
            "qa",
            "--benchmark",
            "longmemeval",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "qa"),
        ],
    )
    assert out.exit_code == 2 and "set OPENAI_API_KEY" in out.output
    assert not (tmp_path / "qa").exists()


def test_locomo_f1_rules():
    f1 = F1Scorer()
    assert f1.tokens("The Dogs, and a cat!") == ["dog", "cat"]
    assert f1.score(4, "adopted dogs", "Adopting the dog") == 1.0
    assert f1.score(2, "7 May 2023", "May 7") == pytest.approx(0.8)
    assert f1.score(1, "Paris, Rome", "Rome, Paris, Oslo") == pytest.approx(2 / 3)
    assert f1.score(3, "likely yes", "Likely yes; because she said so") == 1.0
    assert f1.score(5, "That is not mentioned in the conversation", "") == 1.0
    assert f1.score(5, "Max", "") == 0.0
    assert f1.score(4, "", "Max") == 0.0


def test_judge_prompts_per_type():
    assert "off-by-one" in judge_prompt("temporal-reasoning", False, "q", "a", "r")
    assert "updated answer" in judge_prompt("knowledge-update", False, "q", "a", "r")
    assert "Rubric: a" in judge_prompt("single-session-preference", False, "q", "a", "r")
    abstention = judge_prompt("multi-session", True, "q", "a", "r")
    assert "unanswerable" in abstention and "Explanation: a" in abstention
    plain = judge_prompt("single-session-user", False, "q", "a", "r")
    assert "Correct answer: a" in plain and "off-by-one" not in plain
