"""Layer 3: materialise `mentions` + `user_reactions` of a corpus partition, with the offline teacher and with
the LLM teacher through the real `openai` client against a local chat-completions server."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from memory_assets.common import report_figures
from memory_assets.definitions import default_resources, defs
from memory_assets.partitions import corpus_partitions
from memory_cli.main import cli
from memory_core.corpora import plan_corpora, register
from memory_core.extraction.offline_teacher import RULES_VERSION, OfflineTeacher
from memory_core.extraction.stage import extract_corpus
from memory_core.ingest.loader import ingest_file
from memory_core.segments import build_segments
from memory_core.store.schema import (
    llm_calls,
    mentions,
    residuals,
    segment_extractions,
    segments,
    user_reactions,
)
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage
from tests.chat_server import ok, refusal, slow, status
from tests.conftest import write_json
from tests.samples import chatgpt_conversation, chatgpt_node, locomo_sample

ROOT = Path(__file__).resolve().parents[1]
EXTRACT = dg.AssetSelection.assets("mentions", "user_reactions")


def _conversation(conv_id: str, user_texts: list[str], t0: int = 1_700_000_000) -> dict:
    """A linear ChatGPT conversation: each user text gets a short assistant reply (one segment per round)."""
    mapping = {"root": chatgpt_node("root", None, None, None, ["u0"])}
    prev = "root"
    for i, text in enumerate(user_texts):
        u, a = f"{conv_id}-u{i}", f"{conv_id}-a{i}"
        nxt = f"{conv_id}-u{i + 1}" if i + 1 < len(user_texts) else None
        mapping[u if i else "u0"] = chatgpt_node(u if i else "u0", "user", text, prev, [a], t=t0 + 120 * i)
        mapping[a] = chatgpt_node(
            a, "assistant", f"Noted, reply {i}.", u if i else "u0", [nxt] if nxt else [], t=t0 + 120 * i + 60
        )
        prev = a
    mapping["root"]["children"] = ["u0"]
    return {
        "title": conv_id,
        "create_time": t0,
        "mapping": mapping,
        "current_node": prev,
        "conversation_id": conv_id,
    }


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _corpus(home, instance, tmp_path, name, conversations) -> None:
    """Register, add the partition, and ingest + segment through the domain functions (the ingestion assets
    have their own tests; this keeps each test to the Dagster runs of the stage under test)."""
    path = write_json(tmp_path / f"{name}.json", conversations)
    _ingest(home, name, path)
    instance.add_dynamic_partitions(corpus_partitions.name, [name])


def _ingest(home, name, path) -> None:
    (source,) = plan_corpora(name, path)
    register(home, [source])
    store = home.corpus(name)
    ingest_file(store, source.path, source.source_format, source.record_id)
    build_segments(store)


def _run(instance, home, name, selection, llm: LLMResource, extraction_config: dict | None = None):
    run_config = {"ops": {"extraction": {"config": extraction_config}}} if extraction_config else {}
    return dg.materialize(
        list(defs.assets),
        selection=selection,
        instance=instance,
        partition_key=name,
        resources={**default_resources(), "storage": MemoryStorage(home=str(home.root)), "llm": llm},
        run_config=run_config,
        raise_on_error=False,
    )


def _llm(server, **kw) -> LLMResource:
    return LLMResource(api_key="test-key", base_url=server.url, backoff_base_s=0.01, timeout_s=5.0, **kw)


def _meta(result, asset: str) -> dict:
    return report_figures(
        result.asset_materializations_for_node("extraction")[0 if asset == "mentions" else 1].metadata
    )


def _checks(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def _rows(store, table, order):
    engine = store.reflective if table is user_reactions else store.staging
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(select(table).order_by(order)).mappings()]


# ------------------------------------------------------------------------------------------------ offline
def test_offline_teacher_end_to_end_and_idempotent(home, instance, tmp_path):
    convs = [
        chatgpt_conversation("c1"),
        _conversation(
            "c3",
            [
                "I'm so frustrated, my Django tests keep failing on CI.",
                "I usually run every morning before work.",
            ],
        ),
    ]
    _corpus(home, instance, tmp_path, "offline", convs)
    result = _run(instance, home, "offline", EXTRACT, LLMResource())
    assert result.success
    assert all(_checks(result).values()), _checks(result)
    meta = _meta(result, "mentions")
    assert meta["teacher"] == "offline" and meta["extractor"] == RULES_VERSION and meta["llm_calls"] == 0
    assert meta["span_verified_rate"] == 1.0 and meta["schema_validity_rate"] == 1.0 and meta["accepted"] > 0
    store = home.corpus("offline")
    found = _rows(store, mentions, mentions.c.mention_id)
    assert {m["consolidated_id"] for m in found} == {None} and {m["extractor"] for m in found} == {
        RULES_VERSION
    }
    by_surface = {m["surface"]: m for m in found}
    assert by_surface["Kyoto"]["type"] == "entity"
    assert by_surface["I usually run every morning before work"]["type"] == "behavioral_pattern"
    assert by_surface["I usually run every morning before work"]["description"].startswith(
        "The user usually runs"
    )
    reactions = _rows(store, user_reactions, user_reactions.c.reaction_id)
    assert [(r["state"], r["epistemic_status"], r["evidence_text"]) for r in reactions] == [
        ("Frustration", "explicit", "I'm so frustrated")
    ]
    rmeta = _meta(result, "user_reactions")
    assert (
        rmeta["share_not_other"] == 1.0
        and rmeta["null_timestamp_rate"] == 0.0
        and rmeta["teacher"] == "offline"
    )

    again = _run(instance, home, "offline", EXTRACT, LLMResource())
    meta2 = _meta(again, "mentions")
    assert (
        meta2["conversations_processed"] == 0
        and meta2["conversations_skipped"] == 2
        and meta2["mentions_written"] == 0
    )
    assert _rows(store, mentions, mentions.c.mention_id) == found
    assert _rows(store, user_reactions, user_reactions.c.reaction_id) == reactions


def test_changed_conversation_reextracts_only_new_segments(home, instance, tmp_path):
    texts = ["I adopted a beagle named Pickle last week.", "My sister Maya lives in Lisbon."]
    _corpus(home, instance, tmp_path, "grow", [_conversation("g1", texts)])
    store = home.corpus("grow")
    first = extract_corpus(store, OfflineTeacher())
    assert first.segments_extracted == 2 and first.conversations_processed == 1
    before = {m["mention_id"] for m in _rows(store, mentions, mentions.c.mention_id)}
    path = write_json(
        tmp_path / "grow.json", [_conversation("g1", [*texts, "I'm planning a trip to Porto in May."])]
    )
    _ingest(home, "grow", path)
    report = extract_corpus(store, OfflineTeacher())
    assert (
        report.conversations_processed == 1 and report.segments_reused == 2 and report.segments_extracted == 1
    )
    after = {m["mention_id"]: m for m in _rows(store, mentions, mentions.c.mention_id)}
    assert before < set(after) and any(m["surface"] == "Porto" for m in after.values())
    assert extract_corpus(store, OfflineTeacher()).conversations_skipped == 1


def test_retention_and_purge(home, instance, tmp_path):
    _corpus(
        home, instance, tmp_path, "moods", [_conversation("m1", ["I'm exhausted after the move to Berlin."])]
    )
    kept = _run(instance, home, "moods", EXTRACT, LLMResource(), {"reaction_retention_days": 30.0})
    assert _meta(kept, "user_reactions")["reactions_total"] == 1
    store = home.corpus("moods")
    assert _rows(store, user_reactions, user_reactions.c.reaction_id)[0]["expires_at"] is not None
    out = CliRunner().invoke(cli, ["--home", str(home.root), "reactions", "purge", "moods", "--expired-only"])
    assert out.exit_code == 0 and "purged 0 reactions of moods (expired)" in out.output
    assert "left: reflective_store 1," in out.output  # not expired yet
    out = CliRunner().invoke(cli, ["--home", str(home.root), "reactions", "purge", "moods", "--yes"])
    assert out.exit_code == 0 and "purged 1 reactions of moods (all)" in out.output
    assert "left: reflective_store 0, llm_cache 0, residuals 0, graph 0" in out.output
    # a purge sticks: finished conversations are not re-extracted
    assert extract_corpus(store, OfflineTeacher()).reactions_written == 0
    assert _rows(store, user_reactions, user_reactions.c.reaction_id) == []
    # retention 0: expired as soon as recorded, removed by the run that wrote them
    _corpus(home, instance, tmp_path, "brief", [_conversation("b1", ["I'm so stressed about the exam."])])
    brief = extract_corpus(home.corpus("brief"), OfflineTeacher(), retention_days=0.0)
    assert brief.reactions_written == 1 and brief.reactions_expired == 1
    assert _rows(home.corpus("brief"), user_reactions, user_reactions.c.reaction_id) == []


# ------------------------------------------------------------------------------------------------ LLM
TEXTS = [
    "I booked a ryokan near Gion for April.",  # 429 first
    "Tell me about Osaka castle.",  # always invalid JSON
    "I am frustrated that the Shinkansen sold out.",
    "Please refuse-me politely.",  # refusal
    "My friend Aiko recommended Nara.",
    "We also want to see Fushimi Inari.",
]


def _script(server) -> None:
    server.rules = [
        (lambda r: "Osaka" in server.user_text(r), ok("this is { not json")),
        (lambda r: "refuse-me" in server.user_text(r), refusal("I won't.")),
    ]
    fired = {"gion": False}

    def once_429(req):
        if "Gion" in server.user_text(req) and not fired["gion"]:
            fired["gion"] = True
            return True
        return False

    server.rules.insert(0, (once_429, status(429, retry_after="0")))


def test_llm_teacher_end_to_end_faults_accounting_and_zero_calls_on_rerun(
    home, instance, tmp_path, chat_server
):
    _corpus(
        home, instance, tmp_path, "trip", [_conversation("t1", TEXTS[:3]), _conversation("t2", TEXTS[3:])]
    )
    _script(chat_server)
    result = _run(instance, home, "trip", EXTRACT, _llm(chat_server), {"parallel_calls": 2})
    assert result.success
    checks = _checks(result)
    assert checks["mention_spans_verbatim"] and checks["reaction_schema_validity"]
    assert checks["every_segment_extracted"] is False  # WARN: the invalid answer's segment is pending
    meta = _meta(result, "mentions")
    assert meta["teacher"] == "gpt-4o-mini" and meta["extractor"] == "llm:gpt-4o-mini/extraction/v3"
    # the refusal is final; the invalid answer (chance, not a verdict) is retried by the next run
    assert meta["segments_extracted"] == 4 and meta["segments_failed"] == 1 and meta["segments_pending"] == 1
    assert meta["llm_calls"] == 6 and meta["llm_cache_hits"] == 0
    # 6 calls: one extra HTTP attempt for the 429 and one for the invalid answer's feedback retry
    assert meta["llm_attempts"] == 8 == len(chat_server.requests)
    assert meta["schema_validity_rate"] == 0.8 and meta["cost_usd"] > 0 and meta["tokens_in"] > 0

    store = home.corpus("trip")
    calls = _rows(store, llm_calls, llm_calls.c.call_id)
    assert len(calls) == 6 and sum(c["attempts"] for c in calls) == 8
    assert collections.Counter(c["outcome"] for c in calls) == {"ok": 4, "invalid": 1, "refused": 1}
    assert sum(c["tokens_in"] for c in calls) == meta["tokens_in"] and all(not c["cache_hit"] for c in calls)
    assert len({c["segment_id"] for c in calls}) == 6
    with store.staging.connect() as conn:
        n_segments = conn.execute(select(func.count()).select_from(segments)).scalar_one()
        reasons = {r.reason_code: r.reason for r in conn.execute(select(residuals))}
        status = collections.Counter(r.status for r in conn.execute(select(segment_extractions.c.status)))
    assert n_segments == 6 and status == {"done": 5, "pending": 1}  # every segment answered or pending
    assert "not valid JSON" in reasons["teacher_invalid"] and "won't" in reasons["teacher_refused"]
    found = _rows(store, mentions, mentions.c.mention_id)
    # the server's answer: one entity per person message quoting its first three words
    assert sorted(m["surface"] for m in found) == sorted(
        " ".join(t.split()[:3]) for t in TEXTS if "Osaka" not in t and "refuse-me" not in t
    )
    reactions = _rows(store, user_reactions, user_reactions.c.reaction_id)
    assert [(r["state"], r["evidence_text"]) for r in reactions] == [("Frustration", "frustrated")]

    # a second materialisation asks again only for the invalid answer (never cached) and changes nothing
    requests_before = len(chat_server.requests)
    again = _run(instance, home, "trip", EXTRACT, _llm(chat_server))
    assert again.success and _meta(again, "mentions")["llm_calls"] == 1
    assert len(chat_server.requests) == requests_before + 2  # the call and its feedback retry
    assert "Osaka" in chat_server.user_text(chat_server.requests[-1])
    assert len(_rows(store, llm_calls, llm_calls.c.call_id)) == 7
    assert _rows(store, mentions, mentions.c.mention_id) == found
    assert _rows(store, user_reactions, user_reactions.c.reaction_id) == reactions


def test_llm_outage_leaves_segments_pending_and_the_next_run_retries_only_them(
    home, instance, tmp_path, chat_server
):
    _corpus(
        home, instance, tmp_path, "outage", [_conversation("o1", TEXTS[:2]), _conversation("o2", TEXTS[4:])]
    )
    chat_server.rules = [(lambda r: "Gion" in chat_server.user_text(r), status(503))]
    result = _run(instance, home, "outage", EXTRACT, _llm(chat_server, max_retries=1))
    assert result.success
    meta = _meta(result, "mentions")
    assert meta["segments_pending"] == 1 and meta["conversations_pending"] == 1
    assert _checks(result)["every_segment_extracted"] is False  # WARN: visible, not fatal
    store = home.corpus("outage")
    with store.staging.connect() as conn:
        assert [r.reason_code for r in conn.execute(select(residuals))] == ["llm_unavailable"]
    chat_server.rules = []
    seen = len(chat_server.requests)
    retry = _run(instance, home, "outage", EXTRACT, _llm(chat_server))
    rmeta = _meta(retry, "mentions")
    assert (
        rmeta["conversations_processed"] == 1
        and rmeta["segments_extracted"] == 1
        and rmeta["segments_reused"] == 1
    )
    assert len(chat_server.requests) == seen + 1 and "Gion" in chat_server.user_text(chat_server.requests[-1])
    assert _checks(retry)["every_segment_extracted"]
    with store.staging.connect() as conn:
        assert conn.execute(select(func.count()).select_from(residuals)).scalar_one() == 0


def test_killed_run_resumes_without_repeating_llm_calls(home, instance, tmp_path, chat_server):
    texts = [f"I visited museum number {i} in Kyoto today." for i in range(8)]
    _corpus(home, instance, tmp_path, "crash", [_conversation("k1", texts)])
    stop_after = 3
    chat_server.rules = [(lambda r: len(chat_server.answered) >= stop_after, slow(120))]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": chat_server.url,
        "MEMORY_OS_HOME": str(home.root),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memory_cli.main",
            "materialize",
            "crash",
            "--select",
            "mentions,user_reactions",
            "--quiet",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while len(chat_server.requests) <= stop_after and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    proc.kill()  # SIGKILL mid-conversation: nothing of the conversation was committed
    proc.wait(timeout=30)
    assert len(chat_server.answered) == stop_after
    store = home.corpus("crash")
    assert len(_rows(store, mentions, mentions.c.mention_id)) == 0
    assert len(_rows(store, llm_calls, llm_calls.c.call_id)) == stop_after  # the spend was recorded at once

    chat_server.rules = []
    result = _run(instance, home, "crash", EXTRACT, _llm(chat_server))
    assert result.success
    meta = _meta(result, "mentions")
    assert meta["llm_cache_hits"] == stop_after and meta["llm_calls"] == 8
    answered = collections.Counter(chat_server.user_text(r) for r in chat_server.answered)
    assert len(answered) == 8 and max(answered.values()) == 1  # every segment paid for exactly once
    assert sorted(m["surface"] for m in _rows(store, mentions, mentions.c.mention_id)) == sorted(
        " ".join(t.split()[:3]) for t in texts
    )


def test_locomo_speakers_are_people(home, instance, tmp_path):
    path = write_json(tmp_path / "locomo.json", [locomo_sample("conv-x")])
    _ingest(home, "friends", path)
    instance.add_dynamic_partitions(corpus_partitions.name, ["friends"])
    result = _run(instance, home, "friends", EXTRACT, LLMResource())
    assert result.success and all(_checks(result).values())
    found = {
        (m["type"], m["surface"]): m for m in _rows(home.corpus("friends"), mentions, mentions.c.mention_id)
    }
    adopted = found[("event", "I adopted a puppy named Max")]
    assert adopted["description"] == "Ann adopted a puppy named Max."
    assert ("entity", "Max") in found and not any(s in ("Ann", "Bob") for _, s in found)
