"""The agent loop with the offline driver on the built demo corpus (a comparison, a count across sessions, a
relative date, an unanswerable question), its budgets and traces, the scoping middleware under it, and where
users reach it: `ask`, `memory-os ask`, the MCP tool `ask_memory` through the SDK client."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest
from click.testing import CliRunner
from mcp import Client
from sqlalchemy import select

from memory_cli.main import cli
from memory_core.store.schema import conversations, messages
from memory_query import ReaderPool, Scope, check_citations
from memory_query.agent import AgentBudget
from memory_query.agent.synthesizer import ABSTENTION
from memory_query.agent.trace import TRACE_FILE
from memory_query.api import ask
from memory_query.mcp_server import MemoryServer, build_server


@pytest.fixture(scope="module")
def pool(built_demo):
    with ReaderPool(built_demo[0]) as pool:
        yield pool


@pytest.fixture(scope="module")
def demo(built_demo):
    """(home, name, message id by its first words, conversation title by message id)."""
    home, name = built_demo
    with home.corpus(name).source.connect() as conn:
        rows = conn.execute(
            select(messages.c.message_id, messages.c.text, conversations.c.title).join(
                conversations, conversations.c.conversation_id == messages.c.conversation_id
            )
        ).all()
    by_start = {r.text[:40]: r.message_id for r in rows}
    titles = {r.message_id: r.title for r in rows}
    return home, name, by_start, titles


def message(demo, start: str) -> str:
    return next(mid for text, mid in demo[2].items() if text.startswith(start))


def _valid(answer) -> None:
    """Every sentence of a non-abstaining answer cites evidence the loop submitted, and nothing else."""
    known = {e.citation for e in answer.evidence} | {c["citation"] for c in answer.concepts}
    assert check_citations(answer.answer, known).valid, answer.answer
    assert {s.role for s in answer.steps} == {"planner", "scout", "synthesizer"}
    assert 3 <= len(answer.steps) <= 6


def test_a_comparison_keeps_both_parts_and_orders_them(demo, pool):
    answer = ask(
        "Which did I do first, sign up for the Lisbon half marathon or switch Kestrel to DuckDB?",
        demo[1],
        pool=pool,
    )
    signed, switched = message(demo, "I signed up for the Lisbon"), message(demo, "Update on Kestrel")
    assert answer.plan.intent == "comparison" and len(answer.plan.parts) == 2
    searches = [s for s in answer.steps if s.tool == "smart_search"]
    # the parts searched apart, then the whole question
    assert [s.arguments["query"] for s in searches] == [p.text for p in answer.plan.subs]
    assert searches[-1].arguments["query"] == answer.question
    assert {signed, switched} <= set(answer.ranked_message_ids[:2])  # both kept at the top
    _valid(answer)
    first = answer.answer.split(" came first")[0]
    assert "half marathon" in first and answer.answer.index(signed) < answer.answer.index(switched)
    assert not answer.abstained and answer.stopped_by is None


def test_a_count_collects_across_sessions(demo, pool):
    answer = ask("How many conversations did I have about Kestrel?", demo[1], pool=pool)
    titles = demo[3]
    assert answer.plan.intent == "count"
    top = [titles[m] for m in answer.ranked_message_ids[:3]]
    assert len(set(top)) == 3 and all("Kestrel" in t for t in top), top  # one per session, not one session
    _valid(answer)
    assert answer.answer.startswith("3 conversations")


def test_a_count_of_things_counts_what_the_sentences_name_not_where(demo, pool):
    # "a job offer in Lisbon at a mobility startup called Andorinha": one job, Andorinha; Lisbon is where
    answer = ask("How many jobs have I had?", demo[1], pool=pool)
    _valid(answer)
    head = answer.answer.split(". ")[0]
    assert head.startswith("2 jobs:") and "Northwind Logistics" in head and "Andorinha" in head, head
    assert "Lisbon" not in head


def test_a_relative_date_is_searched_inside_its_range(demo, pool):
    answer = ask("What did I say about Kestrel last month?", demo[1], as_of=datetime(2024, 4, 10), pool=pool)
    window = answer.plan.time_range
    assert window.start == datetime(2024, 3, 1) and window.contains(datetime(2024, 4, 10, 12))
    first = next(s for s in answer.steps if s.tool == "smart_search")
    assert first.arguments["since"] == "2024-03-01T00:00:00"
    _valid(answer)
    cited = [e for e in answer.evidence if e.citation in answer.answer]
    assert cited and all(window.contains(e.created_at) for e in cited)
    assert message(demo, "Update on Kestrel") in answer.answer  # March's Kestrel news, not January's


def test_an_unanswerable_question_abstains_without_repeating_a_failed_strategy(demo, pool):
    answer = ask("Who is my manager?", demo[1], pool=pool)
    assert answer.abstained and answer.answer == ABSTENTION and "[Source:" not in answer.answer
    tried = answer.plan.tried
    assert tried and all(outcome == "failed" for _, outcome in tried)
    assert len({s.key for s, _ in tried}) == len(tried)  # never the same strategy twice
    assert answer.gaps == ["Who is my manager?"]


def test_the_step_cap_forces_the_submission(demo, pool):
    answer = ask(
        "Which did I do first, sign up for the Lisbon half marathon or switch Kestrel to DuckDB?",
        demo[1],
        pool=pool,
        budget=AgentBudget(max_steps=4),
    )
    assert len(answer.steps) == 4 and answer.stopped_by == "steps"
    submit = answer.steps[2]
    assert submit.tool == "submit_evidence" and submit.note.startswith("forced: step cap")
    assert answer.evidence  # what the one search found is still answered from


def test_scope_limits_what_the_agent_sees(demo, pool):
    home, name = demo[0], demo[1]
    with home.corpus(name).source.connect() as conn:
        race = conn.execute(
            select(conversations.c.conversation_id).where(
                conversations.c.title == "Half marathon training plan"
            )
        ).scalar_one()
    answer = ask(
        "Which did I do first, sign up for the Lisbon half marathon or switch Kestrel to DuckDB?",
        name,
        scope=Scope.of(name, [race]),
        pool=pool,
    )
    assert answer.ranked_message_ids and all(demo[3][m] == "Half marathon training plan" for m in answer.ranked_message_ids)  # fmt: skip
    assert answer.gaps  # the DuckDB switch lies outside the scope: not found, not claimed


def test_every_question_is_traced_to_the_corpus(demo, pool, built_demo):
    home, name = built_demo
    path = home.corpus(name).path(*TRACE_FILE)
    before = path.read_text().count("\n") if path.exists() else 0
    answer = ask("When is my half marathon?", name, pool=pool)
    lines = path.read_text().splitlines()
    assert len(lines) == before + 1
    record = json.loads(lines[-1])
    assert record["kind"] == "ask" and record["question"] == "When is my half marathon?"
    assert [s["tool"] for s in record["steps"]] == [s.tool for s in answer.steps]
    step = record["steps"][1]
    assert step["role"] == "scout" and step["ids"] and step["latency_ms"] >= 0 and "tokens_in" in step
    assert "April 21" in answer.answer  # the race moved: the latest dated sentence wins


def test_cli_ask_prints_the_answer_then_the_evidence(demo):
    home, name = demo[0], demo[1]
    runner = CliRunner()
    base = ["--home", str(home.root), "ask", name, "Which database does Kestrel use for analytics now?"]
    out = runner.invoke(cli, [*base, "--driver", "offline"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    first, rest = out.output.split("\n", 1)
    assert "DuckDB" in first and "[Source:" in first
    assert "Evidence:" in rest and "steps (planner 1, scout" in rest
    data = json.loads(runner.invoke(cli, [*base, "--json"], catch_exceptions=False).output)
    assert data["answer"] == first and data["steps"][0]["role"] == "planner"
    # the full trace: every step with its role, tool, arguments, ids, tokens, latency and conclusion
    keys = {"n", "role", "tool", "arguments", "ids", "tokens_in", "tokens_out", "latency_ms", "note"}
    assert all(set(s) == keys and s["note"] for s in data["steps"])
    assert [s["n"] for s in data["steps"]] == list(range(1, len(data["steps"]) + 1))
    search = next(s for s in data["steps"] if s["tool"] == "smart_search")
    assert search["arguments"]["query"] and search["ids"] and search["latency_ms"] >= 0
    assert data["steps"][-1]["role"] == "synthesizer" and data["plan"]["tried"]
    cited = [e for e in data["evidence"] if e["citation"] in data["answer"]]
    assert cited and all(e["message_id"] and e["source_ref"] for e in cited)
    unknown = runner.invoke(cli, ["--home", str(home.root), "ask", "nope", "x"])
    assert unknown.exit_code == 2 and "nope" in unknown.output


def test_mcp_ask_memory_through_the_sdk_client(demo, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no LLM configured: the server's auto is offline
    home, name = demo[0], demo[1]
    server = build_server(MemoryServer(home, [name]))

    async def run():
        async with Client(server) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool(
                "ask_memory", {"corpus": name, "question": "When is my half marathon?", "as_of": "2024-04-01"}
            )
            unknown = await client.call_tool("ask_memory", {"corpus": "other", "question": "x"})
            return tools, result, unknown

    tools, result, unknown = asyncio.run(run())
    assert "ask_memory" in tools and not result.is_error
    data = result.structured_content
    assert "April 21" in data["answer"] and not data["abstained"]
    cited = [e for e in data["evidence"] if e["cite"] in data["answer"]]
    assert cited and cited[0]["source_ref"] and "April 21" in cited[0]["quote"]
    assert all(e["time"] < "2024-04-02" for e in data["evidence"])  # as_of: nothing written later
    assert [s["role"] for s in data["steps"]][0] == "planner" and data["driver"] == "offline"
    assert unknown.is_error and "unknown corpus" in unknown.content[0].text
