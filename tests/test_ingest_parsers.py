"""Parsers and loader on real-shaped inputs of the four formats, good and bad."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from memory_core.errors import InputError
from memory_core.ingest.loader import ingest_file
from memory_core.store.schema import conversations, dead_letters, message_revisions, messages
from tests.conftest import write_json, write_jsonl
from tests.samples import chatgpt_conversation, chatgpt_node, jsonl_rows, locomo_sample, longmemeval_record


def rows(store, table, *order):
    with store.source.connect() as conn:
        return [dict(r) for r in conn.execute(select(table).order_by(*order)).mappings()]


def test_chatgpt_keeps_every_branch_and_active_order(home, tmp_path):
    store = home.corpus("c")
    report = ingest_file(store, write_json(tmp_path / "c.json", [chatgpt_conversation()]), "chatgpt")
    msgs = rows(store, messages, messages.c.position)
    assert [m["source_ref"] for m in msgs] == ["u1", "a1", "u2", "a2", "u2b"]  # active branch first
    by_ref = {m["source_ref"]: m for m in msgs}
    assert by_ref["u2b"]["attributes"]["on_active_branch"] is False
    assert by_ref["a2"]["attributes"]["on_active_branch"] is True
    assert by_ref["u2b"]["parent_id"] == by_ref["a1"]["message_id"]
    assert by_ref["u1"]["parent_id"] is None  # the hidden system node is not stored
    assert report.records_in == 6 and report.stored == 5 and report.dead_lettered == 0
    assert report.structural == 1 and report.records_counted == 6  # the hidden system node is structure
    assert report.dead_letter_reasons == {}
    assert all(m["time_derived"] is False for m in msgs)


def test_chatgpt_multipart_code_and_missing_times(home, tmp_path):
    conv = chatgpt_conversation(branch=False)
    conv["mapping"]["u1"]["message"]["content"] = {
        "content_type": "multimodal_text",
        "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
            "What is in this photo?",
        ],
    }
    conv["mapping"]["a1"]["message"]["content"] = {
        "content_type": "code",
        "language": "python",
        "text": "print(1)",
    }
    conv["mapping"]["a2"]["message"]["create_time"] = None
    store = home.corpus("c")
    ingest_file(store, write_json(tmp_path / "c.json", [conv]), "chatgpt")
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert by_ref["u1"]["text"] == "What is in this photo?"
    assert by_ref["u1"]["attributes"]["attachments"] == ["image_asset_pointer"]
    assert by_ref["a1"]["text"] == "print(1)"
    assert by_ref["a2"]["time_derived"] is True
    assert by_ref["a2"]["created_at"] > by_ref["u2"]["created_at"]


def test_longmemeval_source_refs_dates_and_has_answer(home, tmp_path):
    store = home.corpus("q")
    path = write_json(tmp_path / "lme.json", [longmemeval_record("q1"), longmemeval_record("q2")])
    report = ingest_file(store, path, "longmemeval", record_id="q1")
    assert report.stored == 4 and report.dead_lettered == 0
    msgs = rows(store, messages, messages.c.created_at)
    assert [m["source_ref"] for m in msgs] == ["s_a_0", "s_a_1", "answer_s_b_0", "answer_s_b_1"]
    assert msgs[2]["attributes"] == {"has_answer": True}
    assert all(m["time_derived"] for m in msgs)
    assert str(msgs[0]["created_at"]) == "2023-05-20 02:21:00"
    assert msgs[1]["created_at"] > msgs[0]["created_at"]
    convs = rows(store, conversations, conversations.c.created_at)
    assert [c["source_ref"] for c in convs] == ["s_a", "answer_s_b"]
    # labels are not stored anywhere in the source
    assert "Kyoto" not in json.dumps([c["attributes"] for c in convs])
    with pytest.raises(InputError, match="no LongMemEval question"):
        ingest_file(home.corpus("q3"), path, "longmemeval", record_id="nope")


def test_locomo_dia_ids_speakers_and_captions(home, tmp_path):
    store = home.corpus("l")
    report = ingest_file(store, write_json(tmp_path / "l.json", [locomo_sample()]), "locomo")
    assert report.stored == 3
    msgs = rows(store, messages, messages.c.created_at)
    assert [m["source_ref"] for m in msgs] == ["D1:1", "D1:2", "D2:1"]
    assert [(m["role"], m["author"]) for m in msgs] == [
        ("user", "Ann"),
        ("assistant", "Bob"),
        ("assistant", "Bob"),
    ]
    assert msgs[1]["attributes"]["image_caption"] == "a photo of a cat on a sofa"
    assert str(msgs[0]["created_at"]) == "2023-05-08 13:56:00"
    convs = rows(store, conversations, conversations.c.created_at)
    assert [c["source_ref"] for c in convs] == ["conv-x:S1", "conv-x:S2"]


def test_jsonl_parents_epochs_and_ids(home, tmp_path):
    store = home.corpus("j")
    report = ingest_file(store, write_jsonl(tmp_path / "m.jsonl", jsonl_rows()), "jsonl")
    assert report.stored == 3 and report.conversations_in == 2
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert by_ref["m2"]["parent_id"] == by_ref["m1"]["message_id"]
    assert str(by_ref["m3"]["created_at"]) == "2024-04-01 10:00:00"
    assert by_ref["m1"]["author"] == "dana"


def test_reingest_is_idempotent_and_changes_keep_history(home, tmp_path):
    store = home.corpus("c")
    path = write_json(tmp_path / "c.json", [chatgpt_conversation()])
    first = ingest_file(store, path, "chatgpt")
    before = rows(store, messages, messages.c.message_id)
    again = ingest_file(store, path, "chatgpt")
    assert again.inserted == 0 and again.unchanged == first.stored and again.conversations_unchanged == 1
    assert rows(store, messages, messages.c.message_id) == before
    assert rows(store, dead_letters, dead_letters.c.dead_letter_id) == []  # structure is not a dead letter
    conv = chatgpt_conversation()
    conv["mapping"]["a2"]["message"]["content"]["parts"] = ["Here are four ryokans near Gion."]
    changed = ingest_file(store, write_json(path, [conv]), "chatgpt")
    assert changed.conversations_changed == 1 and changed.inserted == 0
    revisions = rows(store, message_revisions, message_revisions.c.revision_id)
    assert [r["text"] for r in revisions] == ["Here are three ryokans near Gion."]
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert by_ref["a2"]["text"] == "Here are four ryokans near Gion."
    assert {m["message_id"] for m in before} == set(by_ref[r]["message_id"] for r in by_ref)


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "content, problem",
    [
        ('[{"title": "a", "mapping": {}}, {"title": "b", "mapp', "truncated JSON"),
        ('{"title": "not a list"}', "expected a JSON array"),
        ("", "empty"),
        ('[{"mapping": {}} {"mapping": {}}]', "malformed JSON"),
    ],
)
def test_unreadable_file_fails_whole_and_writes_nothing(home, tmp_path, content, problem):
    store = home.corpus("bad")
    good = write_json(tmp_path / "good.json", [chatgpt_conversation()])
    ingest_file(store, good, "chatgpt")
    before = rows(store, messages, messages.c.message_id)
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=problem) as err:
        ingest_file(store, bad, "chatgpt")
    assert str(bad) in str(err.value)
    assert rows(store, messages, messages.c.message_id) == before


def test_truncated_file_after_good_conversations_writes_nothing(home, tmp_path):
    store = home.corpus("t")
    text = json.dumps([chatgpt_conversation("c1"), chatgpt_conversation("c2")])
    path = tmp_path / "t.json"
    path.write_text(text[: len(text) - 40], encoding="utf-8")
    with pytest.raises(InputError, match="truncated"):
        ingest_file(store, path, "chatgpt")
    assert rows(store, messages, messages.c.message_id) == []
    assert rows(store, conversations, conversations.c.conversation_id) == []


def test_bad_records_are_dead_lettered_with_reasons(home, tmp_path):
    conv = chatgpt_conversation(branch=False)
    m = conv["mapping"]
    # a cycle (x <-> y), a node whose parent is missing, an unknown role, an empty text, a 10 MB message
    m["x"] = chatgpt_node("x", "user", "in a cycle", "y", ["y"], t=1_700_000_300)
    m["y"] = chatgpt_node("y", "assistant", "also in a cycle", "x", ["x"], t=1_700_000_301)
    m["orphan"] = chatgpt_node("orphan", "user", "my parent is gone", "ghost", [], t=1_700_000_400)
    m["weird"] = chatgpt_node("weird", "critic", "who am I", "a2", [], t=1_700_000_500)
    m["a2"]["children"].append("weird")
    m["empty"] = chatgpt_node("empty", "assistant", "   ", "u2", [], t=1_700_000_600)
    m["u2"]["children"].append("empty")
    m["big"] = chatgpt_node("big", "assistant", "x" * 10_000_001, "u1", [], t=1_700_000_700)
    m["u1"]["children"].append("big")
    broken = {"title": "no mapping here"}
    store = home.corpus("d")
    path = write_json(tmp_path / "d.json", [conv, broken, chatgpt_conversation("c1")])
    report = ingest_file(store, path, "chatgpt", max_message_chars=10_000_000)
    assert report.dead_letter_reasons == {
        "cycle": 2,
        "unknown_role": 1,
        "empty_text": 1,
        "too_large": 1,
        "bad_shape": 1,
        "duplicate_id": 5,  # the second conversation 'c1': 5 messages (its hidden system node is structure)
    }
    assert report.structural == 2
    assert report.records_in == report.records_counted == report.stored + report.dead_lettered + 2
    by_ref = {r["source_ref"]: r for r in rows(store, messages, messages.c.position)}
    assert (
        by_ref["orphan"]["parent_id"] is None and by_ref["orphan"]["attributes"]["missing_parent"] == "ghost"
    )
    letters = rows(store, dead_letters, dead_letters.c.dead_letter_id)
    assert all(dl["reason"] and dl["payload_excerpt"] is not None for dl in letters)
    assert max(len(dl["payload_excerpt"]) for dl in letters) < 1000  # excerpts, not payloads


def test_invalid_utf8_is_a_record_problem_not_a_file_problem(home, tmp_path):
    good = json.dumps(
        {"id": "ok", "conversation_id": "c", "role": "user", "text": "fine", "created_at": 1}
    ).encode()
    bad = b'{"id": "bad", "conversation_id": "c", "role": "user", "text": "caf\xe9", "created_at": 2}'
    path = tmp_path / "u.jsonl"
    path.write_bytes(good + b"\n" + bad + b"\n")
    report = ingest_file(home.corpus("u"), path, "jsonl")
    assert report.stored == 1 and report.dead_letter_reasons == {"invalid_utf8": 1}
    # the same inside a JSON document
    conv = (
        json.dumps([chatgpt_conversation(branch=False)])
        .encode()
        .replace(b"Kyoto in April", b"Kyoto \xff April")
    )
    path2 = tmp_path / "u.json"
    path2.write_bytes(conv)
    report2 = ingest_file(home.corpus("u2"), path2, "chatgpt")
    assert report2.dead_letter_reasons == {"invalid_utf8": 1} and report2.structural == 1
    assert report2.stored == 3


def test_jsonl_duplicates_unknown_roles_and_untimed_conversations(home, tmp_path):
    lines = jsonl_rows() + [
        {"id": "m1", "conversation_id": "c1", "role": "user", "text": "dup", "created_at": 5},
        {"id": "m9", "conversation_id": "c1", "role": "robot", "text": "beep", "created_at": 5},
        {"id": "n1", "conversation_id": "c9", "role": "user", "text": "no time at all"},
        "not json at all",
        "[1, 2]",
        {"id": "m10", "conversation_id": "c1", "role": "user", "text": "late, no time"},
    ]
    report = ingest_file(home.corpus("j"), write_jsonl(tmp_path / "j.jsonl", lines), "jsonl")
    assert report.dead_letter_reasons == {
        "duplicate_id": 1,
        "unknown_role": 1,
        "no_timestamp": 1,
        "malformed_json": 1,
        "bad_shape": 1,
    }
    assert report.stored == 4  # m1 m2 m3 m10 (m10's time derived from m2)
    assert report.records_in == report.records_counted == report.stored + report.dead_lettered


def test_unknown_format_and_missing_file(home, tmp_path):
    with pytest.raises(InputError, match="unknown format"):
        ingest_file(home.corpus("x"), tmp_path, "csv")
    with pytest.raises(InputError, match="no such file"):
        ingest_file(home.corpus("x"), tmp_path / "nope.json", "chatgpt")


def test_store_from_an_older_schema_is_upgraded_or_refused(home, tmp_path):
    from sqlalchemy import create_engine

    from memory_core.errors import SchemaMismatchError

    store = home.corpus("old")
    store.dir.mkdir(parents=True)
    legacy = create_engine(f"sqlite:///{store.dir / 'staging.db'}")
    with legacy.begin() as conn:  # an older topics table: lacks the nullable domain_id and the required label
        conn.exec_driver_sql("CREATE TABLE topics (topic_id VARCHAR(64) PRIMARY KEY, profile TEXT NOT NULL)")
    legacy.dispose()
    with pytest.raises(SchemaMismatchError, match="topics .* lacks label"):
        store.engine("staging")
    with legacy.begin() as conn:
        conn.exec_driver_sql("DROP TABLE topics")
        conn.exec_driver_sql(
            "CREATE TABLE topics AS SELECT 'x' AS topic_id, 'l' AS label, 'p' AS profile, "
            "'[]' AS keywords, '[]' AS centroid, 1 AS size, '2024-01-01' AS recorded_at"
        )
    legacy.dispose()
    fresh = home.corpus("old")
    with fresh.staging.connect() as conn:
        cols = {r[1] for r in conn.exec_driver_sql("PRAGMA table_info(topics)")}
    assert {"domain_id", "silhouette", "label_centroid_distance"} <= cols


def test_messages_report_and_ingestion_contracts(home, tmp_path):
    from memory_core.corpora import CorpusSource
    from memory_core.ingest import checks as contracts
    from memory_core.ingest.records import DEFAULT_MAX_MESSAGE_CHARS
    from memory_core.ingest.stage import ingest_source
    from memory_core.segments import build_segments, segments_trace_to_messages

    store = home.corpus("c")
    nothing = contracts.input_accounting(store)
    assert not nothing.passed and nothing.figures == {"problem": "no file ingested yet"}
    path = write_json(tmp_path / "c.json", [chatgpt_conversation(), chatgpt_conversation("c2", "Second")])
    report = ingest_source(store, CorpusSource("c", "chatgpt", str(path)), DEFAULT_MAX_MESSAGE_CHARS)
    meta = report.as_metadata()
    assert json.loads(json.dumps(meta)) == meta  # plain JSON-able values
    assert meta["records_in"] == meta["records_counted"] == 12 and meta["stored"] == 10
    assert meta["messages_total"] == 10 and meta["structural"] == 2 and meta["dead_letter_reasons"] == []
    assert meta["source_path"] == str(path) and meta["conversations_new"] == 2
    segmented = build_segments(store, token_cap=64)
    assert segmented.as_metadata()["token_cap"] == 64 and segmented.as_metadata()["segments"] > 0
    contracts_of_stage = (
        contracts.no_null_timestamps,
        contracts.no_dangling_parents,
        contracts.input_accounting,
        segments_trace_to_messages,
    )
    assert all(contract(store).passed for contract in contracts_of_stage)
    assert contracts.input_accounting(store).figures == {
        "records_counted": 12,
        "records_in": 12,
        "stored": 10,
        "dead_lettered": 0,
        "structural": 2,
        "unaccounted": 0,
    }

    # a message edited behind the loader's back: its parent dangles and its segment no longer quotes it
    raw = store.source.raw_connection()
    try:
        raw.execute("PRAGMA foreign_keys=OFF")
        raw.execute("UPDATE messages SET parent_id = 'nowhere', text = 'edited' WHERE source_ref = 'a2'")
        raw.commit()
    finally:
        raw.close()
    dangling = contracts.no_dangling_parents(store)
    assert not dangling.passed and dangling.figures == {"dangling_parent_ids": 2}
    trace = segments_trace_to_messages(store)
    assert not trace.passed and trace.figures["bad_spans"] == 2 and trace.figures["uncovered_messages"] == 0
