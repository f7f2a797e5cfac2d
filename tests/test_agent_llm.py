"""The LLM driver through the real `openai` client against a local OpenAI-compatible server (tests/chat_server.py),
scripted per role: a comparison answered end to end (strict schemas, costs in `llm_calls`, the cache), a
Synthesizer whose uncited sentence and whose citation of evidence it was not given never reach the user, a
Scout that loops until the step cap stops it, the token cap, and a failing call that falls back to the rules."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime

import pytest
from sqlalchemy import select

from memory_core.llm.factory import LLMSettings, build_llm_client
from memory_core.store.db import MemoryHome
from memory_core.store.schema import canonical_concepts, llm_calls, messages
from memory_query import ReaderPool, check_citations
from memory_query.agent import AgentBudget
from memory_query.agent.llm_driver import LLMDriver
from memory_query.agent.synthesizer import ABSTENTION
from memory_query.api import ask
from tests.chat_server import Reply, status

QUESTION = "Which did I do first, sign up for the Lisbon half marathon or switch Kestrel to DuckDB?"
ASKED = datetime(2024, 12, 1)


@pytest.fixture
def corpus(built_demo, tmp_path):
    """A private copy of the built demo (these tests write llm_calls rows and traces)."""
    home, name = built_demo
    shutil.copytree(home.root, tmp_path / "home")
    copy = MemoryHome.resolve(tmp_path / "home")
    with ReaderPool(copy) as pool:
        yield copy, name, pool


def role_of(request: dict) -> str:
    """The role a request is for: the Scout calls tools where the endpoint has them."""
    if request.get("tools"):
        return "ScoutOut"
    return request["response_format"]["json_schema"]["name"]


def as_tool_call(request: dict, answer: dict) -> Reply:
    """A scripted ScoutOut as the endpoint's tool call (only the called tool's arguments)."""
    function = next(t["function"] for t in request["tools"] if t["function"]["name"] == answer["tool"])
    return Reply(tool_call=(answer["tool"], {k: answer[k] for k in function["parameters"]["properties"]}))


class Script:
    """Per role, the answers in order (the last one repeats); each a dict or a function of the request."""

    def __init__(self, server, **roles):
        self.server = server
        self.roles = {name: list(answers) for name, answers in roles.items()}
        self.calls: dict[str, int] = {}
        server.rules.append((lambda req: role_of(req) in self.roles, self.reply))

    def reply(self, request: dict) -> Reply:
        if request.get("tools") and not self.server.tools_supported:
            return Reply()  # the server refuses it before any answer is used
        name = role_of(request)
        n = self.calls.get(name, 0)
        self.calls[name] = n + 1
        answers = self.roles[name]
        answer = answers[min(n, len(answers) - 1)]
        answer = answer(request) if callable(answer) else answer
        if isinstance(answer, Reply):
            return answer
        return as_tool_call(request, answer) if request.get("tools") else Reply(content=json.dumps(answer))


def user_text(request: dict) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def found_id(request: dict, words: str) -> str:
    """The id of a message the Scout's prompt lists as found, whose snippet holds `words`."""
    for line in user_text(request).splitlines():
        m = re.match(r"- ([0-9a-f-]{36}) \(.*?\): (.*)", line)
        if m and words in m.group(2):
            return m.group(1)
    raise AssertionError(f"no found message holds {words!r}")


def evidence_ids(request: dict) -> list[str]:
    return re.findall(r"^\[Source:([0-9a-f-]{36})\]", user_text(request), re.M)


PLAN = {
    "reasoning": "two events to date apart",
    "intent": "comparison",
    "sub_questions": [
        {"label": "A", "text": "signed up Lisbon half marathon"},
        {"label": "B", "text": "switched Kestrel to DuckDB"},
    ],
    "time_range": {"start": "", "end": "", "label": ""},
    "order": "first",
    "measure": "",
    "anchor_event": "",
    "anchor_relation": "",
}


def scout(tool: str, sub: str = "A", query: str = "", message_ids=(), claim: str = "") -> dict:
    return {
        "reasoning": f"{tool} for {sub}",
        "tool": tool,
        "sub_question": sub,
        "query": query,
        "in_time_range": False,
        "node_id": "",
        "paths": [],
        "message_id": "",
        "message_ids": list(message_ids),
        "claim": claim,
    }


def submit(*words: str):
    """The Scout's exit with the found messages holding each of `words`."""

    def answer(request: dict) -> dict:
        ids = [found_id(request, w) for w in words]
        return scout("submit_evidence", message_ids=ids, claim="the events with their dates")

    return answer


submit_both = submit("signed up for the Lisbon", "DuckDB")
SEARCH_BOTH = [
    scout("smart_search", "A", "signed up Lisbon half marathon"),
    scout("smart_search", "B", "switched Kestrel to DuckDB"),
    submit_both,
]


def driver_for(server, home: MemoryHome) -> LLMDriver:
    settings = LLMSettings(
        teacher="openai",
        api_key="sk-test-agent",
        base_url=server.url,
        model="gpt-4o-mini",
        backoff_base_s=0.01,
    )
    return LLMDriver(build_llm_client(settings, home.cache_dir))


def tomas_message(home: MemoryHome, name: str) -> str:
    with home.corpus(name).source.connect() as conn:
        return conn.execute(
            select(messages.c.message_id).where(messages.c.text.like("OK, I'll go with PostgreSQL%"))
        ).scalar_one()


def test_llm_driver_answers_a_comparison_and_the_uncited_sentence_never_reaches_the_user(chat_server, corpus):
    home, name, pool = corpus
    other = tomas_message(home, name)  # a real message the Synthesizer was not given

    def synthesis(request):
        a, b = evidence_ids(request)[:2]
        return {
            "reasoning": "2024-01-15 is before 2024-03-02",
            "answer": f"You signed up for the Lisbon half marathon first [Source:{a}]. "
            f"You switched Kestrel to DuckDB later [Source:{b}]. You will certainly win the race. "
            f"Tomás helped with the model [Source:{other}].",
            "abstain": False,
            "gaps": [],
        }

    Script(
        chat_server,
        PlanOut=[PLAN],
        ScoutOut=SEARCH_BOTH,
        SynthesisOut=[synthesis],
    )
    driver = driver_for(chat_server, home)
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver, pool=pool)

    assert [s.role for s in answer.steps] == ["planner", "scout", "scout", "scout", "synthesizer"]
    assert "will certainly win" not in answer.answer and other not in answer.answer
    assert {d["why"].split(":")[0] for d in answer.dropped} == {
        "cites no evidence",
        "cites what it was not given",
    }
    known = {e.citation for e in answer.evidence}
    assert check_citations(answer.answer, known).valid and answer.answer.count("[Source:") == 2
    assert not answer.abstained and answer.plan.intent == "comparison" and answer.driver == "llm"
    # every role went through the strict client, the Scout by strict tool calls; its second prompt knows the
    # first call
    scouts = [r for r in chat_server.requests if role_of(r) == "ScoutOut"]
    assert all(r["tool_choice"] == "required" and "response_format" not in r for r in scouts)
    assert {t["function"]["name"] for t in scouts[0]["tools"]} == {"smart_search", "lens", "explore_node", "read_source_message", "submit_evidence"}  # fmt: skip
    others = [r for r in chat_server.requests if r not in scouts]
    assert all(r["response_format"]["json_schema"]["strict"] for r in others)
    assert "signed up Lisbon half marathon" in user_text(scouts[1]).split("Calls made so far")[1]
    # costed: one llm_calls row per call, tokens in the steps
    with home.corpus(name).staging.connect() as conn:
        rows = conn.execute(select(llm_calls.c.stage, llm_calls.c.tokens_in, llm_calls.c.cache_hit)).all()
    assert sorted(r.stage for r in rows) == ["agent_planner", "agent_scout", "agent_scout", "agent_scout", "agent_synthesizer"]  # fmt: skip
    assert all(r.tokens_in > 0 and not r.cache_hit for r in rows)
    assert answer.tokens == sum(s.tokens_in + s.tokens_out for s in answer.steps) > 0

    # cached: the same question again pays nothing and answers the same
    sent = len(chat_server.requests)
    again = ask(QUESTION, name, as_of=ASKED, driver=driver, pool=pool)
    assert len(chat_server.requests) == sent and again.answer == answer.answer
    with home.corpus(name).staging.connect() as conn:
        hits = conn.execute(select(llm_calls.c.cache_hit).where(llm_calls.c.cache_hit.is_(True))).all()
    assert len(hits) == 5


def test_a_scout_that_loops_is_stopped_by_the_step_cap(chat_server, corpus):
    home, name, pool = corpus
    Script(
        chat_server,
        PlanOut=[PLAN],
        ScoutOut=[scout("smart_search", "A", "half marathon")],  # the same call, every time
        SynthesisOut=[
            lambda r: {
                "reasoning": "",
                "answer": f"You signed up [Source:{evidence_ids(r)[0]}].",
                "abstain": False,
                "gaps": [],
            }
        ],  # fmt: skip
    )
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver_for(chat_server, home), pool=pool)
    # the Scout's share of the 6 steps is 3: the Planner's and two Synthesizer attempts are kept out of it
    assert len(answer.steps) == 5 and answer.stopped_by == "steps"
    scout_steps = [s for s in answer.steps if s.role == "scout"]
    assert [s.tool for s in scout_steps] == ["smart_search"] * 2 + ["submit_evidence"]
    assert scout_steps[1].note.startswith("refused: this strategy was already tried")
    assert scout_steps[2].note.startswith("forced: step cap reached") and answer.evidence
    assert len([r for r in chat_server.requests if role_of(r) == "ScoutOut"]) == 3
    last = [r for r in chat_server.requests if role_of(r) == "ScoutOut"][-1]
    assert "call submit_evidence now" in user_text(last) and "refused" in user_text(last)


def test_a_draft_with_no_cited_sentence_is_retried_then_abstains(chat_server, corpus):
    home, name, pool = corpus
    uncited = {"reasoning": "", "answer": "You did the half marathon first.", "abstain": False, "gaps": []}
    Script(
        chat_server,
        PlanOut=[PLAN],
        ScoutOut=[
            scout("smart_search", "A", "half marathon"),
            scout("submit_evidence", message_ids=[], claim="x"),
        ],
        SynthesisOut=[uncited],
    )
    # the Scout submitted nothing: abstained without a Synthesizer call
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver_for(chat_server, home), pool=pool)
    assert (
        answer.abstained
        and answer.answer == ABSTENTION
        and "SynthesisOut" not in map(role_of, chat_server.requests)
    )

    chat_server.rules.clear()
    Script(chat_server, PlanOut=[PLAN], ScoutOut=[scout("smart_search", "A", "half marathon"), submit("signed up for the Lisbon")], SynthesisOut=[uncited])  # fmt: skip
    answer = ask(QUESTION, name, as_of=datetime(2024, 12, 2), driver=driver_for(chat_server, home), pool=pool)
    synth = [r for r in chat_server.requests if role_of(r) == "SynthesisOut"]
    assert len(synth) == 2 and "Your previous answer was rejected" in user_text(synth[1])
    assert answer.abstained and answer.answer == ABSTENTION  # the uncited draft never reaches the user
    assert [d["sentence"] for d in answer.dropped] == ["You did the half marathon first."] * 2


def test_a_scout_that_spends_its_share_still_leaves_the_synthesizer_its_retry(chat_server, corpus):
    home, name, pool = corpus
    uncited = {"reasoning": "", "answer": "You did the half marathon first.", "abstain": False, "gaps": []}

    def cited(request: dict) -> dict:
        return {"reasoning": "", "answer": f"You signed up first [Source:{evidence_ids(request)[0]}].", "abstain": False, "gaps": []}  # fmt: skip

    Script(chat_server, PlanOut=[PLAN], ScoutOut=[scout("smart_search", "A", "half marathon")], SynthesisOut=[uncited, cited])  # fmt: skip
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver_for(chat_server, home), pool=pool)
    assert answer.stopped_by == "steps" and len(answer.steps) == 6  # the cap holds, retry included
    synth = [s for s in answer.steps if s.role == "synthesizer"]
    assert [s.arguments["retry"] for s in synth] == [False, True]
    assert not answer.abstained and answer.answer.startswith("You signed up first [Source:")
    assert [d["sentence"] for d in answer.dropped] == ["You did the half marathon first."]


def test_the_token_cap_stops_the_scout(chat_server, corpus):
    home, name, pool = corpus
    Script(chat_server, PlanOut=[PLAN], ScoutOut=[scout("smart_search", "A", "half marathon")])
    driver = driver_for(chat_server, home)
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver, budget=AgentBudget(max_tokens=1), pool=pool)
    assert answer.stopped_by == "tokens" and "ScoutOut" not in map(role_of, chat_server.requests)
    assert answer.steps[1].note.startswith("forced: token cap reached") and answer.abstained


def test_a_failing_call_is_decided_by_the_rules(chat_server, corpus):
    home, name, pool = corpus
    Script(
        chat_server,
        PlanOut=[PLAN],
        ScoutOut=SEARCH_BOTH,
    )
    chat_server.rules.append((lambda r: role_of(r) == "SynthesisOut", status(500)))
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver_for(chat_server, home), pool=pool)
    synth = answer.steps[-1]
    assert synth.role == "synthesizer" and "LLM call error" in synth.note and "offline rules" in synth.note
    assert not answer.abstained and "came first" in answer.answer  # the extractive Synthesizer answered
    assert answer.plan.intent == "comparison" and answer.plan.notes == ["two events to date apart"]


def test_an_endpoint_without_tool_calls_gets_the_strict_response_format(chat_server, corpus):
    home, name, pool = corpus
    chat_server.tools_supported = False
    Script(chat_server, PlanOut=[PLAN], ScoutOut=SEARCH_BOTH, SynthesisOut=[{"reasoning": "", "answer": "", "abstain": True, "gaps": []}])  # fmt: skip
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver_for(chat_server, home), pool=pool)
    scouts = [
        r
        for r in chat_server.requests
        if "tools" in r or r["response_format"]["json_schema"]["name"] == "ScoutOut"
    ]
    assert "tools" in scouts[0] and all(
        "tools" not in r for r in scouts[1:]
    )  # refused once, then never again
    assert [r["response_format"]["json_schema"]["name"] for r in scouts[1:]] == ["ScoutOut"] * 3
    assert [s.tool for s in answer.steps if s.role == "scout"] == [
        "smart_search",
        "smart_search",
        "submit_evidence",
    ]


def test_a_synthesizer_may_cite_a_concept_it_was_given_and_never_one_it_was_not(chat_server, corpus):
    home, name, pool = corpus
    with home.corpus(name).staging.connect() as conn:
        every = {f"[Concept:{c}]" for c in conn.execute(select(canonical_concepts.c.concept_id)).scalars()}
    seen = {}

    def synthesis(request):
        text = user_text(request)
        given = re.findall(r"^(\[Concept:[^\]]+\]) concept: (.*)$", text, re.M)
        signed = next(c for c, title in given if "signed up" in title)
        foreign = sorted(c for c in every if c not in text)[0]  # a real concept, not in this evidence
        seen.update(signed=signed, foreign=foreign)
        a, b = evidence_ids(request)[:2]
        return {
            "reasoning": "the sign-up concept dates the first event",
            "answer": f"You signed up for the Lisbon half marathon first {signed}. "
            f"You switched Kestrel to DuckDB later [Source:{b}]. You also like cycling {foreign}.",
            "abstain": False,
            "gaps": [],
        }

    Script(chat_server, PlanOut=[PLAN], ScoutOut=SEARCH_BOTH, SynthesisOut=[synthesis])
    answer = ask(QUESTION, name, as_of=ASKED, driver=driver_for(chat_server, home), pool=pool)

    assert seen["signed"] in {c["citation"] for c in answer.concepts}  # the loop gave it, with its evidence
    assert answer.answer.startswith(f"You signed up for the Lisbon half marathon first {seen['signed']}.")
    assert seen["foreign"] not in answer.answer and "cycling" not in answer.answer
    assert answer.dropped == [
        {"sentence": f"You also like cycling {seen['foreign']}.", "why": f"cites what it was not given: {seen['foreign']}"}
    ]  # fmt: skip


def test_mcp_ask_memory_uses_the_llm_driver_when_an_llm_is_configured(chat_server, corpus, monkeypatch):
    """The server's default driver is `auto`, the CLI's rule: with a key and an endpoint in the environment
    ask_memory answers through the LLM driver (the real openai client against the scripted server); without
    a key, offline."""
    import asyncio

    from mcp import Client

    from memory_query.mcp_server import MemoryServer, build_server

    home, name, _pool = corpus
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert MemoryServer(home, [name]).agent_driver.name == "offline"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-mcp")
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")

    def synthesis(request):
        a, b = evidence_ids(request)[:2]
        return {"reasoning": "dates", "answer": f"The sign-up came first [Source:{a}], then DuckDB [Source:{b}].",
                "abstain": False, "gaps": []}  # fmt: skip

    Script(chat_server, PlanOut=[PLAN], ScoutOut=SEARCH_BOTH, SynthesisOut=[synthesis])
    memory = MemoryServer(home, [name])
    assert memory.agent_driver.name == "llm"

    async def run():
        async with Client(build_server(memory)) as client:
            return await client.call_tool(
                "ask_memory", {"corpus": name, "question": QUESTION, "as_of": "2024-12-01"}
            )

    result = asyncio.run(run())
    assert not result.is_error
    data = result.structured_content
    assert data["driver"] == "llm" and data["answer"].startswith("The sign-up came first [Source:")
    assert [s["role"] for s in data["steps"]] == ["planner", "scout", "scout", "scout", "synthesizer"]
    served = {role_of(r) for r in chat_server.requests}
    assert served == {"PlanOut", "ScoutOut", "SynthesisOut"}  # every role went to the configured LLM
    assert check_citations(data["answer"], {e["cite"] for e in data["evidence"]}).valid
