"""Agent tools (bounded outputs, every node type, OR fallback) and the scoping middleware (adversarial ids
look unknown; nothing outside the allowed sessions comes out)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from memory_core.store.schema import canonical_concepts, concept_evidence, conversations, messages, segments
from memory_query import MemoryTools, ReaderPool, Scope, ScopedTools, ToolError, query_memory
from memory_query.tools import query_components


@pytest.fixture(scope="module")
def pool(built_demo):
    with ReaderPool(built_demo[0]) as pool:
        yield pool


@pytest.fixture(scope="module")
def demo(built_demo):
    home, name = built_demo
    store = home.corpus(name)
    with store.source.connect() as conn:
        convs = {
            r.title: r.conversation_id
            for r in conn.execute(select(conversations.c.title, conversations.c.conversation_id))
        }
        msgs = [
            dict(r)
            for r in conn.execute(
                select(messages.c.message_id, messages.c.conversation_id, messages.c.text)
            ).mappings()
        ]
    return home, name, store, convs, msgs


def test_every_node_type_can_be_explored(demo, pool):
    home, name, store, convs, msgs = demo
    tools = MemoryTools(pool.reader(name), trace=False)
    with store.staging.connect() as conn:
        concept = conn.execute(select(canonical_concepts.c.concept_id)).first()[0]
        segment = conn.execute(select(segments.c.segment_id)).first()[0]
    for node_id, node_type in [
        (msgs[0]["message_id"], "Message"),
        (concept, "Concept"),
        (segment, "Segment"),
        (msgs[0]["conversation_id"], "Conversation"),
    ]:
        out = tools.explore_node(node_id)
        assert out.type == node_type and out.summary
        assert out.relations, f"{node_type} has relations to walk"
        lensed = tools.lens(node_id)
        assert lensed.type == node_type
    out = tools.lens(concept, ["Concept>Message"])
    assert out.paths["Concept>Message"].items[0].type == "Message"
    with pytest.raises(ToolError, match="cannot go from Concept to Domain"):
        tools.lens(concept, ["Concept>Domain"])


def test_outputs_are_capped(demo, pool):
    home, name, store, convs, msgs = demo
    tools = MemoryTools(pool.reader(name), trace=False)
    tools.limits.max_ids = 3
    conv = convs["Kestrel: moving off PostgreSQL"]
    out = tools.lens(conv, ["Conversation>Message"], max_ids=50)
    path = out.paths["Conversation>Message"]
    assert len(path.items) == 3 and path.total > 3 and "more not shown" in path.more
    assert len(tools.smart_search("Kestrel", k=50).results) <= 3


def test_smart_search_or_fallback_and_reading_sources(demo, pool):
    home, name, store, convs, msgs = demo
    tools = MemoryTools(pool.reader(name), trace=False)
    assert query_components("DuckDB, PostgreSQL and the knee") == ["DuckDB", "PostgreSQL", "the knee", "knee"]
    whole = tools.smart_search("DuckDB", k=5)
    assert whole.fallback_components == [] and "DuckDB" in whole.results[0].snippet
    weak = tools.smart_search("zzzqx wombats", k=5)  # none of its words occur: each part is tried
    assert weak.fallback_components == ["zzzqx", "wombats"]
    multi = tools.smart_search("Why DuckDB for the dock history, and how is the knee?", k=4)
    assert multi.fallback_components[:2] == ["Why DuckDB for the dock history", "how is the knee"]
    snippets = " ".join(r.snippet for r in multi.results)
    assert "DuckDB" in snippets and "knee" in snippets  # both parts are answered
    first = whole.results[0].id
    source = tools.read_source_message(first, context=1)
    assert source.cite == f"[Source:{first}]" and source.text and source.source_ref
    assert len(source.before) <= 1 and len(source.after) <= 1
    with pytest.raises(ToolError, match="no message"):
        tools.read_source_message("00000000-0000-0000-0000-000000000000")


def test_submit_evidence_checks_ids_and_traces(demo, pool, tmp_path):
    home, name, store, convs, msgs = demo
    tools = MemoryTools(pool.reader(name), trace=True)
    out = tools.submit_evidence([msgs[0]["message_id"], "not-an-id"], "the user starts Kestrel")
    assert out.accepted == [msgs[0]["message_id"]] and out.rejected == ["not-an-id"]
    with pytest.raises(ToolError):
        tools.submit_evidence([msgs[0]["message_id"]], "  ")
    trace = (store.dir / "traces" / "agent_trace.jsonl").read_text().splitlines()
    assert json.loads(trace[-1])["tool"] == "submit_evidence"


def test_scope_removes_every_id_outside_the_sessions(demo, pool):
    home, name, store, convs, msgs = demo
    allowed = {convs["Half marathon training plan"], convs["Race date change and knee"]}
    scope = Scope.of(name, allowed)
    answer = query_memory(
        "Which database does Kestrel use? When is the half marathon?", name, k=10, scope=scope, pool=pool
    )
    by_id = {m["message_id"]: m for m in msgs}
    assert answer.items and all(by_id[i.message_id]["conversation_id"] in allowed for i in answer.items)
    for concept in answer.concepts:
        assert all(by_id[m]["conversation_id"] in allowed for m in concept.evidence_message_ids)
    for outside in [m for m in msgs if m["conversation_id"] not in allowed]:
        assert outside["message_id"] not in answer.context
    tools = ScopedTools(MemoryTools(pool.reader(name), trace=False), scope)
    outside_msg = next(m["message_id"] for m in msgs if m["conversation_id"] not in allowed)
    inside_msg = next(m["message_id"] for m in msgs if m["conversation_id"] in allowed)
    # adversarial ids: another session's message, another session's conversation, a made-up id — all "unknown"
    for node_id in (outside_msg, convs["Kestrel launch"], "11111111-2222-3333-4444-555555555555"):
        with pytest.raises(ToolError, match="no node"):
            tools.explore_node(node_id)
        with pytest.raises(ToolError, match="no node"):
            tools.lens(node_id)
    with pytest.raises(ToolError, match="no node"):
        tools.read_source_message(outside_msg)
    out = tools.submit_evidence([inside_msg, outside_msg], "race")
    assert out.accepted == [inside_msg] and outside_msg in out.rejected
    found = tools.smart_search("Kestrel PostgreSQL DuckDB", k=5)
    assert all(by_id[r.id]["conversation_id"] in allowed for r in found.results)
    # concepts whose evidence lies only outside are unknown too
    with store.staging.connect() as conn:
        rows = conn.execute(select(concept_evidence.c.concept_id, concept_evidence.c.message_id)).all()
    outside_only = {c for c, _ in rows} - {c for c, m in rows if by_id[m]["conversation_id"] in allowed}
    assert outside_only
    with pytest.raises(ToolError, match="no node"):
        tools.explore_node(next(iter(outside_only)))
    lensed = tools.lens(inside_msg, ["Message>Conversation>Message"])
    assert all(
        by_id[i.id]["conversation_id"] in allowed for i in lensed.paths["Message>Conversation>Message"].items
    )


def test_scope_for_another_corpus_is_refused(demo):
    home, name, *_ = demo
    from memory_query.scoping import ScopeError

    with pytest.raises(ScopeError):
        query_memory("anything", name, scope=Scope.of("someone-else"), home=home)
