"""Layer 3: the revision assets on real-shaped corpora built by the runner (offline teacher, hashing
embeddings): a multi-month chat whose facts change (current / as_of / believed_at answers), a claim ingested
out of order, an edited and a deleted message (the rebuild succeeds, the old concept is not served, the
repair is logged and rolls back), same-time conflicting values, and a ChatGPT branch."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from memory_assets.common import report_figures
from memory_core.concepts import action_log
from memory_core.concepts.checks import action_log_replays
from memory_core.concepts.store import content_hash
from memory_core.revision import checks as revision_checks
from memory_core.revision.repair import rollback_repairs
from memory_core.store.db import utcnow
from memory_core.store.schema import action_log as action_log_table
from memory_core.store.schema import canonical_concepts, claims, concept_evidence, fact_states, repair_queue
from memory_query import RetrievalSettings, query_memory
from memory_query.fact_history import fact_history
from memory_query.pool import reading
from tests.conftest import write_json
from tests.revision_samples import (
    CONFLICT,
    MOVES,
    TACOMA,
    build,
    edited,
    offline_runner,
    running_export,
    without,
    write_chat,
)


@pytest.fixture
def runner(home, instance):
    return offline_runner(home, instance)


def _checks(run) -> dict[str, bool]:
    return {e.check_name: e.passed for e in run.result.get_asset_check_evaluations()}


def _residence(answer) -> list[tuple[str, str]]:
    """(text, fact status) of the items stating where the user lives, in rank order."""
    out = []
    for item in answer.items:
        fact = next((f for f in item.facts if f["attribute"] == "residence"), None)
        if fact is not None:
            out.append((fact["value"], fact["status"]))
    return out


def _metadata(run, asset: str) -> dict:
    return report_figures(run.result.asset_materializations_for_node(asset)[0].metadata)


def test_the_current_fact_ranks_first_and_the_superseded_one_says_so(home, runner, tmp_path):
    run = build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES))
    assert run.success and all(_checks(run).values()), _checks(run)
    meta = _metadata(run, "fact_states")
    assert meta["supersessions"] == 5 and meta["conflicts"] == 0  # residence, workplace, food, gym, cats
    assert _metadata(run, "claims")["claims_by_status"] == {"active": 18}
    # the memory loop keeps another value of a fact apart: "I live in Seattle now" is neither a restatement
    # nor an instance of "I live in Portland", so no concept holds evidence of two values of one slot
    ce = concept_evidence.c
    with home.corpus("moves").staging.connect() as conn:
        held = conn.execute(
            select(ce.concept_id, claims.c.subject, claims.c.attribute, claims.c.value)
            .join(claims, claims.c.mention_id == ce.mention_id)
            .join(canonical_concepts, canonical_concepts.c.concept_id == ce.concept_id)
            # a theme ("The user often talks about cats") is about its episodes, whatever values they set
            .where(
                ce.status == "active",
                claims.c.polarity == "affirmed",
                canonical_concepts.c.type != "behavioral_pattern",
            )
        ).all()
    values: dict[tuple, set[str]] = {}
    for cid, subject, attribute, value in held:
        values.setdefault((cid, subject, attribute), set()).add(value)
    assert values and not {k: v for k, v in values.items() if len(v) > 1}, {
        k: v for k, v in values.items() if len(v) > 1
    }

    answer = query_memory("Where do I live?", "moves", 4, home=home)
    assert _residence(answer)[:2] == [("Seattle", "current"), ("Portland", "superseded")]
    first, second = answer.items[0], answer.items[1]
    assert "Seattle" in first.text and "Portland" in second.text and first.score > second.score
    portland = second.as_dict()
    assert portland["fact_status"] == "superseded" and portland["valid_until"] == "2024-07-15T20:00:00"
    assert portland["superseded_by"] == first.citation and portland["valid_from"] == "2024-01-10T09:00:00"
    evidence = [line for line in answer.context.splitlines() if line.strip().startswith("<evidence")]
    assert 'status="superseded"' in evidence[1] and f'superseded_by="{first.citation}"' in evidence[1]
    assert 'valid_until="2024-07-15T20:00:00"' in evidence[1] and 'status="current"' in evidence[0]
    assert '<fact subject="the user" slot="residence" value="Portland" status="superseded"' in answer.context

    # valid-time travel: what was true in March
    march = query_memory(
        "Where do I live?", "moves", 4, home=home, as_of=utcnow().replace(year=2024, month=3, day=1)
    )
    assert _residence(march)[0] == ("Portland", "current")
    with reading("moves", home) as reader:
        history = {g["slot"]: g for g in fact_history(reader, "user")}
    assert history["residence"]["current"] == "Seattle" and history["workplace"]["current"] == "Amazon"
    assert history["possession:cat"]["current"] == "3" and history["favourite:food"]["current"] == "ramen"
    assert [s["value"] for s in history["schedule:gym day"]["states"]] == [
        "Mondays and Wednesdays",
        "Tuesdays and Thursdays",
    ]
    assert history["workplace"]["states"][1]["valid_from"] == "2024-07-08T00:00:00"  # "last week", resolved
    vehicle = history["vehicle"]["states"]
    assert [(s["value"], s["status"]) for s in vehicle] == [
        ("Honda Civic", "ended"),
        ("Tesla Model 3", "current"),
    ]


def test_believed_at_answers_what_memory_held_before_it_learnt_more(home, runner, tmp_path):
    path = write_chat(tmp_path / "moves.jsonl", MOVES[:6])  # January and March only
    assert build(runner, "moves", path).success
    time.sleep(0.05)
    between = utcnow()
    time.sleep(0.05)
    write_chat(path, MOVES)  # the export grew: July and September
    assert build(runner, "moves", path).success

    now = query_memory("Where do I live?", "moves", 4, home=home)
    then = query_memory("Where do I live?", "moves", 4, home=home, believed_at=between)
    assert _residence(now)[:2] == [("Seattle", "current"), ("Portland", "superseded")]
    assert ("Portland", "current") in _residence(then) and ("Seattle", "current") not in _residence(then)
    # the agent reads the same view: its answer as memory believed it then
    from memory_query.api import ask

    asked_now, asked_then = (
        ask("Where do I live?", "moves", home=home, **view) for view in ({}, {"believed_at": between})
    )
    assert "Seattle" in asked_now.answer and "Portland" not in asked_now.answer
    assert "Portland" in asked_then.answer and "Seattle" not in asked_then.answer
    assert {"I live in Seattle now.", "I live in Portland with my wife Anna."} <= {
        e.quote for e in asked_then.evidence
    }
    # and so do the commands
    from memory_cli.main import cli

    for command in ("query", "ask"):
        args = ["--home", str(home.root), command, "moves", "Where do I live?", "--json"]
        now_out, then_out = (
            CliRunner().invoke(cli, args + extra, obj={})
            for extra in ([], ["--believed-at", between.isoformat()])
        )
        assert now_out.exit_code == 0 and then_out.exit_code == 0, (now_out.output, then_out.output)
        now_json, then_json = json.loads(now_out.output), json.loads(then_out.output)
        if command == "ask":
            assert "Seattle" in now_json["answer"] and "Portland" in then_json["answer"]
        else:
            first = [i["text"] for i in then_json["items"][:1]]
            assert "Portland" in first[0] and "Seattle" in now_json["items"][0]["text"], (
                first,
                now_json["items"][0],
            )
    with reading("moves", home) as reader:
        believed = {g["slot"]: g for g in fact_history(reader, believed_at=between)}
        current = {g["slot"]: g for g in fact_history(reader)}
    assert believed["residence"]["current"] == "Portland" and len(believed["residence"]["states"]) == 1
    assert current["residence"]["current"] == "Seattle"
    # nothing was overwritten: the open Portland version was superseded in system time, a closed one recorded
    with home.corpus("moves").staging.connect() as conn:
        versions = conn.execute(
            select(fact_states.c.value, fact_states.c.valid_until, fact_states.c.superseded_at)
            .where(fact_states.c.attribute == "residence", fact_states.c.value == "Portland")
            .order_by(fact_states.c.recorded_at)
        ).all()
    assert [(v.valid_until is None, v.superseded_at is None) for v in versions] == [
        (True, False),
        (False, True),
    ]


def test_a_claim_ingested_out_of_order_is_inserted_in_its_place(home, runner, tmp_path):
    path = write_chat(tmp_path / "moves.jsonl", MOVES)
    assert build(runner, "moves", path).success
    write_chat(path, MOVES + TACOMA)  # April's message arrives after July's
    run = build(runner, "moves", path)
    assert run.success and _metadata(run, "fact_states")["out_of_order_claims"] >= 1
    with reading("moves", home) as reader:
        residence = fact_history(reader, slot="residence")[0]
    assert [
        (s["value"], s["status"], s["valid_from"][:10], (s["valid_until"] or "")[:10])
        for s in residence["states"]
    ] == [
        ("Portland", "superseded", "2024-01-10", "2024-04-20"),
        ("Tacoma", "superseded", "2024-04-20", "2024-07-15"),
        ("Seattle", "current", "2024-07-15", ""),
    ]
    assert revision_checks.no_overlapping_valid_intervals(home.corpus("moves")).passed


def test_an_edited_and_a_deleted_message_rebuild_invalidate_repair_and_roll_back(home, runner, tmp_path):
    path = write_chat(tmp_path / "moves.jsonl", MOVES)
    assert build(runner, "moves", path).success
    store = home.corpus("moves")
    before_edit = query_memory("Where do I live?", "moves", 8, home=home)
    old = next(c for c in before_edit.concepts if "Portland" in c.title and c.type != "entity")
    assert old.trust == "stable"

    write_chat(path, without(edited(MOVES, "u1", "in Portland", "in Vancouver"), "u2"))
    run = build(runner, "moves", path)
    checks = _checks(run)
    assert run.success and checks["mention_spans_verbatim"] and checks["evidence_grounding"], checks
    # every check but the WARN quality figure purity, which on ten messages under hashing vectors is noise
    assert all(ok for n, ok in checks.items() if n != "concept_purity"), [
        n for n, ok in checks.items() if not ok
    ]

    meta = _metadata(run, "claims")
    assert meta["evidence_invalidated"]["rejected"] >= 3 and meta["repairs_enqueued"] >= 3
    assert meta["status_changes"]["active→rejected"] >= 3
    with store.staging.connect() as conn:
        row = (
            conn.execute(select(canonical_concepts).where(canonical_concepts.c.concept_id == old.concept_id))
            .mappings()
            .one()
        )
        reasons = dict(
            conn.execute(
                select(claims.c.value, claims.c.state_reason).where(claims.c.state == "rejected")
            ).all()
        )
        queue = [dict(r) for r in conn.execute(select(repair_queue)).mappings()]
        repairs = [r for r in action_log.read(conn) if r["action"] == "repair"]
    assert row["state"] == "archived" and row["trust"] == "archived" and row["confidence"] == 0.0
    assert "the span no longer reads" in reasons["Portland"] and "removed from the input" in reasons["2"]
    assert {r["status"] for r in queue} == {"done"} and repairs
    assert all(r["cited_message_ids"] for r in repairs)

    after = query_memory("Where do I live?", "moves", 8, home=home)
    assert old.concept_id not in {c.concept_id for c in after.concepts}
    assert _residence(after)[:2] == [("Seattle", "current"), ("Vancouver", "superseded")]
    assert action_log_replays(store).passed

    # the archive of the old concept rolls back exactly, and the log still replays
    archive = next(r for r in queue if r["concept_id"] == old.concept_id)
    repaired = content_hash(store)
    with store.write_lock():
        done = rollback_repairs(store, repair_ids=[archive["repair_id"]])
    assert done[0]["concepts"] == [old.concept_id] and content_hash(store) != repaired
    with store.staging.connect() as conn:
        restored = conn.execute(select(canonical_concepts.c.state, canonical_concepts.c.trust).where(
            canonical_concepts.c.concept_id == old.concept_id)).one()  # fmt: skip
        rollbacks = (
            conn.execute(select(action_log_table.c.action).where(action_log_table.c.actor == "repair_worker"))
            .scalars()
            .all()
        )
    assert tuple(restored) == ("weak", "broken")  # as the invalidation left it: live, no surviving evidence
    assert "rollback" in rollbacks and action_log_replays(store).passed


def test_same_time_conflicting_values_are_disputed_and_escalated(home, runner, tmp_path):
    run = build(runner, "drinks", write_chat(tmp_path / "drinks.jsonl", CONFLICT))
    assert run.success
    meta = _metadata(run, "fact_states")
    assert meta["conflicts"] == 2 and meta["concepts_disputed"] == 2
    store = home.corpus("drinks")
    with store.staging.connect() as conn:
        disputed = conn.execute(select(claims.c.value).where(claims.c.state == "disputed")).scalars().all()
        concepts = {r.concept_id: r for r in conn.execute(select(canonical_concepts)).all()}
        queue = conn.execute(select(repair_queue.c.status, repair_queue.c.note)).all()
    assert sorted(disputed) == ["black coffee", "green tea"]
    related = [
        c for c in concepts.values() if any(rel["relation"] == "conflicts_with" for rel in c.relations)
    ]
    assert len(related) == 2 and {c.trust for c in related} == {"disputed"}
    assert {rel["target_id"] for c in related for rel in c.relations} == {c.concept_id for c in related}
    assert {s for s, _ in queue} == {"escalated"} and all("conflict" in n for _, n in queue)
    # the check allows disputed states to overlap: they are reported, not a broken history
    assert revision_checks.no_overlapping_valid_intervals(store).passed
    assert revision_checks.repair_queue_drained(store).passed  # nothing left queued; escalated rows say why


def test_contradiction_is_only_looked_for_inside_one_subject_and_slot(home, runner, tmp_path):
    """Where the user lives and where they work, said within a minute: different values at the same time,
    which a contradiction search across slots would dispute. Per (subject, slot) neither meets the other."""
    said = [
        ("c1", "u1", "user", "2024-05-02T10:00:00", "I live in Portland."),
        ("c1", "a1", "assistant", "2024-05-02T10:00:05", "Portland is lovely."),
        ("c1", "u2", "user", "2024-05-02T10:00:30", "I work at Intel."),
        ("c1", "a2", "assistant", "2024-05-02T10:00:35", "Intel, nice."),
    ]  # fmt: skip
    path = write_chat(tmp_path / "said.jsonl", said)
    run = build(runner, "said", path)
    assert run.success and _metadata(run, "fact_states")["conflicts"] == 0
    store = home.corpus("said")

    def believed():
        with store.staging.connect() as conn:
            rows = conn.execute(
                select(fact_states.c.attribute, fact_states.c.value, fact_states.c.status,
                       fact_states.c.fact_state_id, fact_states.c.conflicts_with)
                .where(fact_states.c.superseded_at.is_(None))
            ).all()  # fmt: skip
            trusts = set(conn.execute(select(canonical_concepts.c.trust)).scalars())
            disputed = conn.execute(select(claims.c.claim_id).where(claims.c.state == "disputed")).all()
        return {r.attribute: r for r in rows}, trusts, disputed

    states, trusts, disputed = believed()
    assert {a: (r.value, r.status) for a, r in states.items()} == {
        "residence": ("Portland", "current"), "workplace": ("Intel", "current"),
    }  # fmt: skip
    assert not any(r.conflicts_with for r in states.values()) and not disputed and "disputed" not in trusts
    # a third slot told in the same minute leaves both histories as they were: no new version of either
    write_chat(path, said + [("c1", "u3", "user", "2024-05-02T10:01:00", "I drive a Honda Civic.")])
    run = build(runner, "said", path)
    assert run.success and _metadata(run, "fact_states")["conflicts"] == 0
    again, trusts, disputed = believed()
    assert again["vehicle"].value == "Honda Civic" and again["vehicle"].status == "current"
    for attribute in ("residence", "workplace"):
        assert again[attribute] == states[attribute]  # the same stored row, same status
    assert not disputed and "disputed" not in trusts


def test_an_abandoned_chatgpt_branch_is_citable_but_never_current(home, runner, tmp_path):
    path = write_json(tmp_path / "conversations.json", running_export())
    assert build(runner, "chats", path, "chatgpt").success
    answer = query_memory("Do I run in the evenings?", "chats", 8, home=home)
    texts = [i.text for i in answer.items]
    kept, first = (
        texts.index("I can run in the mornings before work."),
        texts.index("I can only run in the evenings."),
    )
    assert kept < first
    # without the path the edited-away text, which matches the question better, ranks above the kept one
    plain = query_memory(
        "Do I run in the evenings?",
        "chats",
        8,
        home=home,
        settings=RetrievalSettings().without("current_facts"),
    )
    plain_texts = [i.text for i in plain.items]
    assert plain_texts.index("I can only run in the evenings.") < plain_texts.index(
        "I can run in the mornings before work."
    )
    item = answer.items[first]
    assert item.on_active_branch is False and answer.items[kept].on_active_branch is True
    assert item.as_dict()["on_active_branch"] is False
    line = next(ln for ln in answer.context.splitlines() if item.citation in ln and "<evidence" in ln)
    assert 'branch="abandoned"' in line

    where = query_memory("Where do I live?", "chats", 8, home=home)
    assert _residence(where)[:2] == [("Porto", "current"), ("Lisbon", "archived")]
    with reading("chats", home) as reader:
        residence = fact_history(reader, slot="residence")[0]
    assert residence["current"] == "Porto" and [s["value"] for s in residence["states"]] == ["Porto"]
    assert residence["not_in_history"][0]["value"] == "Lisbon"
    assert "abandoned ChatGPT branch" in residence["not_in_history"][0]["reason"]


def test_the_facts_command_prints_and_exports_the_history(home, runner, tmp_path):
    from memory_cli.main import cli

    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    cli_runner = CliRunner()
    out = cli_runner.invoke(cli, ["--home", str(home.root), "facts", "moves", "--slot", "residence"], obj={})
    assert out.exit_code == 0, out.output
    assert (
        "the user · residence: Seattle" in out.output
        and "Portland" in out.output
        and "superseded" in out.output
    )
    as_json = cli_runner.invoke(
        cli,
        ["--home", str(home.root), "facts", "moves", "--subject", "user", "--as-of", "2024-05-01", "--json"],
        obj={},
    )
    body = json.loads(as_json.output)
    residence = next(g for g in body["facts"] if g["slot"] == "residence")
    assert residence["current"] == "Portland" and body["as_of"] == "2024-05-01"


def test_facts_history_and_fact_states_over_mcp(home, runner, tmp_path):
    import asyncio

    from mcp import Client

    from memory_query.mcp_server import MemoryServer, build_server
    from tests.test_mcp import _data

    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    server = build_server(MemoryServer(home, ["moves"]))

    async def session():
        async with Client(server) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            facts = _data(await client.call_tool("facts", {"corpus": "moves", "slot": "residence"}))
            march = _data(
                await client.call_tool(
                    "facts", {"corpus": "moves", "slot": "residence", "as_of": "2024-03-01"}
                )
            )
            answer = _data(
                await client.call_tool("query_memory", {"corpus": "moves", "question": "Where do I live?"})
            )
            old = facts["facts"][0]["states"][0]["fact_state_id"]
            node = _data(await client.call_tool("explore_node", {"corpus": "moves", "node_id": old}))
            concept = facts["facts"][0]["states"][1]["concept"][len("[Concept:") : -1]
            lensed = _data(
                await client.call_tool(
                    "lens", {"corpus": "moves", "node_id": concept, "paths": ["Concept>FactState>HISTORY"]}
                )
            )
            return tools, facts, march, answer, node, lensed

    tools, facts, march, answer, node, lensed = asyncio.run(session())
    assert "facts" in tools
    [residence] = facts["facts"]
    assert residence["current"] == "Seattle" and [s["value"] for s in residence["states"]] == [
        "Portland",
        "Seattle",
    ]
    assert residence["states"][0]["superseded_by"]["value"] == "Seattle"
    assert march["facts"][0]["current"] == "Portland"
    first, second = answer["evidence"][:2]
    assert (first["fact_status"], second["fact_status"]) == ("current", "superseded")
    assert second["superseded_by"] == first["cite"] and second["valid_until"] == "2024-07-15T20:00:00"
    assert node["type"] == "FactState" and "Portland" in node["summary"] and "superseded" in node["summary"]
    assert node["relations"]["FactState>SUPERSEDED_BY"]["first"][0]["label"].startswith(
        "the user residence: Seattle"
    )
    history = lensed["paths"]["Concept>FactState>HISTORY"]["items"]
    assert [h["label"].split(":")[1].split("(")[0].strip() for h in history] == ["Portland", "Seattle"]


def test_a_concept_holding_two_values_of_one_fact_is_split(home, runner, tmp_path):
    """As if the memory loop had attached "ramen" to the "sushi" concept: the repair worker splits them."""
    from memory_core.concepts.snapshots import Workspace, write_state
    from memory_core.revision.repair import run_repairs
    from memory_core.store.schema import mentions

    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    store = home.corpus("moves")
    with store.staging.connect() as conn:
        food = {
            r.value: r.concept_id
            for r in conn.execute(
                select(claims.c.value, claims.c.concept_id).where(claims.c.attribute == "favourite:food")
            )
        }
    sushi, ramen = food["sushi"], food["ramen"]
    ws = Workspace(store)
    before = ws.snapshot([sushi, ramen])
    after = json.loads(json.dumps(before, default=str))
    after["evidence"][sushi] = before["evidence"][sushi] + before["evidence"][ramen]
    for mention_id, cid in before["mention_links"].items():
        if cid == ramen:
            after["mention_links"][mention_id] = sushi
    after["concepts"] = dict(before["concepts"])
    with store.staging.begin() as conn:
        write_state(
            conn,
            {**before, "concepts": {sushi: before["concepts"][sushi]}},
            {**after, "concepts": {sushi: before["concepts"][sushi]}},
        )
        conn.execute(claims.update().where(claims.c.concept_id == ramen).values(concept_id=sushi))
        conn.execute(repair_queue.insert().values(concept_id=sushi, trust="stable", reason="mixed values", status="queued",
                                                  enqueued_at=utcnow()))  # fmt: skip

    with store.write_lock():
        report = run_repairs(store, run_id="test-split")
    assert report.actions["split"] == 1 and report.repaired == 1
    with store.staging.connect() as conn:
        # the fact mentions (the clause is also evidence of its subject's and its themes' hubs)
        rows = conn.execute(
            select(mentions.c.consolidated_id, mentions.c.surface).where(
                mentions.c.type.not_in(("entity", "project"))
            )
        ).all()
        queue = conn.execute(
            select(repair_queue.c.action, repair_queue.c.note, repair_queue.c.cited_claim_ids)
        ).one()
    holders = {surface: cid for cid, surface in rows if "favourite food" in surface}
    assert (
        holders["My favourite food is sushi"] == sushi
        and holders["My favourite food is ramen these days"] != sushi
    )
    assert queue.action == "split" and "kept" in queue.note and len(queue.cited_claim_ids) == 2
    assert action_log_replays(store).passed


def test_the_repairs_commands_list_and_roll_back(home, runner, tmp_path):
    from memory_cli.main import cli

    path = write_chat(tmp_path / "moves.jsonl", MOVES)
    assert build(runner, "moves", path).success
    write_chat(path, without(MOVES, "u2"))
    assert build(runner, "moves", path).success
    cli_runner = CliRunner()
    listed = cli_runner.invoke(cli, ["--home", str(home.root), "repairs", "list", "moves", "--json"], obj={})
    rows = json.loads(listed.output)
    archived = next(r for r in rows if r["action"] == "archive")
    assert {r["status"] for r in rows} == {"done"} and archived["cited_message_ids"]
    out = cli_runner.invoke(
        cli, ["--home", str(home.root), "repairs", "rollback", "moves", str(archived["repair_id"])], obj={}
    )
    assert (
        out.exit_code == 0
        and f"rolled back repair {archived['repair_id']} (archive, 1 concepts)" in out.output
    )
    again = json.loads(
        cli_runner.invoke(
            cli, ["--home", str(home.root), "repairs", "list", "moves", "--json"], obj={}
        ).output
    )
    assert next(r for r in again if r["repair_id"] == archived["repair_id"])["status"] == "rolled_back"
    refused = cli_runner.invoke(
        cli, ["--home", str(home.root), "repairs", "rollback", "moves", str(archived["repair_id"])], obj={}
    )
    assert refused.exit_code != 0 and "no applied repair" in refused.output


def test_the_graph_holds_fact_states_and_their_history(home, runner, tmp_path):
    from memory_core.graph import open_graph

    path = write_chat(tmp_path / "moves.jsonl", MOVES)
    run = build(runner, "moves", path, selection=None)  # every stage, the graph included
    checks = _checks(run)
    assert (
        run.success and checks["graph_counts_match_tables"] and checks["evidence_points_to_source_messages"]
    )
    store = home.corpus("moves")
    with store.staging.connect() as conn:
        seattle = conn.execute(
            select(fact_states.c.concept_id).where(
                fact_states.c.value == "Seattle", fact_states.c.superseded_at.is_(None)
            )
        ).scalar_one()
        portland = conn.execute(
            select(fact_states.c.concept_id, fact_states.c.valid_until).where(
                fact_states.c.value == "Portland"
            )
        ).one()
    with open_graph(store) as graph:
        current = graph.fact_states(seattle, attribute="residence")
        old_now = graph.fact_states(portland.concept_id, attribute="residence")
        old_then = graph.fact_states(
            portland.concept_id, valid_at=portland.valid_until.replace(month=3), attribute="residence"
        )
        assert [s.node.props["value"] for s in current] == ["Seattle"]
        assert current[0].node.props["status"] == "current" and current[0].edge["status"] == "current"
        assert old_now == []  # no longer true
        assert [s.node.props["value"] for s in old_then] == ["Portland"]
        assert old_then[0].node.props["superseded_by"] and old_then[0].node.props["subject"] == "user"


def test_a_dispute_the_repair_cannot_settle_is_a_fixed_point(home, runner, tmp_path):
    """A claim read off a message beside any mention is its concept's too: fact_states disputes the concept
    for it, and the repair worker must see the same live conflict, not settle it (each rebuild then disputed
    and settled the concept again, two actions more in the log every run, every memo downstream missed)."""
    # two favourite drinks told minutes apart, neither saying it changed: disputed, each a concept's claim
    said = [
        ("c1", "u1", "user", "2024-05-02T10:00:00", "My favourite drink is green tea."),
        ("c1", "a1", "assistant", "2024-05-02T10:00:05", "Green tea is lovely."),
        ("c1", "u2", "user", "2024-05-02T10:03:00", "My favourite drink is black coffee."),
        ("c1", "a2", "assistant", "2024-05-02T10:03:05", "Coffee it is, then."),
    ]  # fmt: skip
    path = write_chat(tmp_path / "gym.jsonl", said)
    assert build(runner, "gym", path).success
    store = home.corpus("gym")

    def log_rows() -> int:
        with store.staging.connect() as conn:
            return conn.execute(select(func.count()).select_from(action_log_table)).scalar_one()

    with store.staging.connect() as conn:
        disputed = (
            conn.execute(
                select(claims.c.concept_id).where(
                    claims.c.state == "disputed", claims.c.concept_id.is_not(None)
                )
            )
            .scalars()
            .all()
        )
    assert disputed  # the shape this test is about: a disputed claim attributed to a concept
    settled = log_rows()
    again = build(runner, "gym", path)
    assert again.success and _metadata(again, "fact_states")["concepts_disputed"] == 0
    assert log_rows() == settled
    with store.staging.connect() as conn:
        trust = (
            conn.execute(
                select(canonical_concepts.c.trust).where(canonical_concepts.c.concept_id.in_(disputed))
            )
            .scalars()
            .all()
        )
    assert set(trust) == {"disputed"}

    # a later single value closes both sides of the dispute: the concept is settled, once
    later = ("c2", "u9", "user", "2024-06-10T09:00:00", "My favourite drink is mint tea these days.")
    write_chat(path, [*said, later])
    settled = build(runner, "gym", path)
    assert settled.success
    with store.staging.connect() as conn:
        trust = (
            conn.execute(
                select(canonical_concepts.c.trust).where(canonical_concepts.c.concept_id.in_(disputed))
            )
            .scalars()
            .all()
        )
    assert set(trust) == {"stable"}, trust
    after_settling = log_rows()
    assert build(runner, "gym", path).success and log_rows() == after_settling
