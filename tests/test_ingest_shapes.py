"""The input shapes that crashed ingestion or escaped its accounting (issue 18), one by one: each is stored,
dead-lettered with a reason (one row per record) or counted as structure, and the census - a count of the
file's records made without the parser - agrees."""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest
from sqlalchemy import select

from memory_core.errors import InputError
from memory_core.ingest import checks as contracts
from memory_core.ingest.loader import ingest_file
from memory_core.store.schema import dead_letters, messages
from tests.conftest import write_json, write_jsonl
from tests.samples import chatgpt_conversation, jsonl_rows, locomo_sample, longmemeval_record


def rows(store, table, *order):
    with store.source.connect() as conn:
        return [dict(r) for r in conn.execute(select(table).order_by(*order)).mappings()]


def balanced(report) -> bool:
    accounted = report.stored + report.dead_lettered + report.structural
    return report.records_in == report.records_counted == accounted


def ingest(home, tmp_path, name, value, fmt, **kw):
    path = (
        write_jsonl(tmp_path / f"{name}.jsonl", value)
        if fmt == "jsonl"
        else write_json(tmp_path / f"{name}.json", value)
    )
    store = home.corpus(name)
    report = ingest_file(store, path, fmt, **kw)
    assert balanced(report), report
    assert contracts.input_accounting(store).passed
    assert len(rows(store, dead_letters, dead_letters.c.dead_letter_id)) == report.dead_lettered
    return store, report


# ------------------------------------------------------------------------------------------ crashes before
def test_a_list_as_chatgpt_parent_is_a_dead_letter(home, tmp_path):
    conv = chatgpt_conversation(branch=False)
    conv["mapping"]["u2"]["parent"] = ["p1"]  # was: TypeError: unhashable type: 'list'
    store, report = ingest(home, tmp_path, "p", [conv], "chatgpt")
    assert report.dead_letter_reasons == {"bad_shape": 1}
    (letter,) = rows(store, dead_letters, dead_letters.c.dead_letter_id)
    assert letter["source_ref"] == "c1/u2" and letter["reason"] == "parent is a JSON array, not a node id"
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert by_ref["a2"]["parent_id"] is None  # its child's ancestry is unknown past it: a root


@pytest.mark.parametrize("bad", [1e20, -1e20, float("inf"), float("nan"), 10**30, "1e20", True])
def test_extreme_create_times_are_derived_or_dead_lettered(home, tmp_path, bad):
    conv = chatgpt_conversation(branch=False)
    conv["mapping"]["a1"]["message"]["create_time"] = bad  # was: OSError / OverflowError
    store, report = ingest(home, tmp_path, "t", [conv], "chatgpt")
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert report.stored == 4 and by_ref["a1"]["time_derived"] is True
    assert by_ref["u1"]["created_at"] < by_ref["a1"]["created_at"] < by_ref["u2"]["created_at"]
    assert "unparsed_create_time" in by_ref["a1"]["attributes"]
    conv["create_time"] = bad
    for node in conv["mapping"].values():
        if node["message"]:
            node["message"]["create_time"] = bad
    # nothing left to store: the file is refused, naming why (issue 17), and nothing is written
    with pytest.raises(InputError, match=r"all 4 record\(s\) are dead letters \(no_timestamp ×4\)"):
        ingest(home, tmp_path, "t2", [conv], "chatgpt")


@pytest.mark.parametrize("edge", ["9999-12-31T23:59:59", "0001-01-01T00:00:00"])
def test_derived_times_past_year_9999_or_before_year_1_are_dead_letters(home, tmp_path, edge):
    lines = [
        {"id": "m1", "conversation_id": "c", "role": "user", "text": "first", "created_at": None},
        {"id": "m2", "conversation_id": "c", "role": "user", "text": "at the edge", "created_at": edge},
        {"id": "m3", "conversation_id": "c", "role": "user", "text": "after it"},
    ]
    store, report = ingest(home, tmp_path, "edge", lines, "jsonl")
    stored = {m["source_ref"] for m in rows(store, messages, messages.c.position)}
    lost = {dl["source_ref"].split("@")[0] for dl in rows(store, dead_letters, dead_letters.c.dead_letter_id)}
    # past 9999 the turn after the edge has no time; before year 1 the turn before it
    assert lost == ({"m3"} if edge.startswith("9999") else {"m1"}) and stored == {"m1", "m2", "m3"} - lost
    assert report.dead_letter_reasons == {"no_timestamp": 1}


def test_a_jsonl_parent_cycle_is_cut_not_a_foreign_key_crash(home, tmp_path):
    lines = [
        {"id": "a", "conversation_id": "c", "role": "user", "text": "one", "created_at": 1, "parent_id": "b"},
        {
            "id": "b",
            "conversation_id": "c",
            "role": "assistant",
            "text": "two",
            "created_at": 2,
            "parent_id": "a",
        },
        {
            "id": "s",
            "conversation_id": "c",
            "role": "user",
            "text": "self",
            "created_at": 3,
            "parent_id": "s",
        },
    ]
    store, report = ingest(home, tmp_path, "cyc", lines, "jsonl")  # was: FOREIGN KEY constraint failed
    assert report.stored == 3
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert by_ref["a"]["parent_id"] == by_ref["b"]["message_id"] and by_ref["b"]["parent_id"] is None
    assert by_ref["b"]["attributes"]["parent_cycle"] == "a" and by_ref["s"]["parent_id"] is None


def test_a_failing_statement_never_shows_its_parameters(home):
    from sqlalchemy import insert
    from sqlalchemy.exc import IntegrityError

    store = home.corpus("p")
    row = dict(
        message_id="m",
        conversation_id="no-such-conversation",
        role="user",
        author="u",
        text="zqxj private diary words",
        created_at=None,
        time_derived=False,
        position=0,
        content_sha256="x",
        source_ref="m",
        attributes={},
    )
    with pytest.raises(IntegrityError) as err, store.source.begin() as conn:
        conn.execute(insert(messages), [row])
    assert "zqxj" not in str(err.value) and "parameters hidden" in str(err.value)


# ------------------------------------------------------------------------------------------ accounting
def test_one_dead_letter_row_per_dead_record(home, tmp_path):
    conv = chatgpt_conversation(branch=False)  # 4 messages and a hidden system node
    store, report = ingest(home, tmp_path, "rep", [conv, conv, conv], "chatgpt")
    assert report.stored == 4 and report.structural == 3
    assert report.dead_letter_reasons == {"duplicate_id": 8}  # was: 1 row for the repeats
    refs = [dl["source_ref"] for dl in rows(store, dead_letters, dead_letters.c.dead_letter_id)]
    assert len(set(refs)) == 8 and "c1#3/a2" in refs
    bad = [
        {"id": "x", "conversation_id": "c", "role": "robot", "text": f"beep {i}", "created_at": i}
        for i in range(3)
    ]
    good = {"id": "y", "conversation_id": "c", "role": "user", "text": "hello", "created_at": 5}
    store, report = ingest(home, tmp_path, "lines", [*bad, good], "jsonl")  # one record to store
    assert [dl["source_ref"] for dl in rows(store, dead_letters, dead_letters.c.dead_letter_id)] == [
        "x@line:1",
        "x@line:2",
        "x@line:3",
    ]


def test_locomo_session_key_variants_are_all_counted(home, tmp_path):
    sample = locomo_sample()
    c = sample["conversation"]
    turns = [{"speaker": "Ann", "dia_id": f"D9:{i}", "text": f"turn {i}"} for i in range(3)]
    c["session_01"] = turns  # was: 1 record for 3 turns
    c["session_01_date_time"] = "1:00 pm on 1 July, 2023"
    c["Session_3"] = [
        {"speaker": "Bob", "dia_id": f"D3:{i}", "text": f"later {i}"} for i in range(2)
    ]  # was: uncounted
    store, report = ingest(home, tmp_path, "lo", [sample], "locomo")
    assert report.records_counted == 3 + 3 + 2 and report.stored == 8
    convs = {m["conversation_id"] for m in rows(store, messages, messages.c.position)}
    assert len(convs) == 4  # S1, S2, session_01 beside session_1, S3


def test_a_longmemeval_file_without_record_id_ingests_every_question(home, tmp_path):
    q2 = longmemeval_record("q2")
    q2["haystack_session_ids"] = ["s_c", "answer_s_b"]  # one new session, one shared with q1
    store, report = ingest(home, tmp_path, "lme", [longmemeval_record("q1"), q2], "longmemeval")
    assert report.records_counted == 8  # was: the second question ignored
    assert report.stored == 6 and report.dead_letter_reasons == {"duplicate_id": 2}
    _, one = ingest(home, tmp_path, "lme1", [longmemeval_record("q1"), q2], "longmemeval", record_id="q2")
    assert one.records_counted == one.stored == 4


def test_chatgpt_parts_that_are_not_text_are_a_dead_letter(home, tmp_path):
    conv = chatgpt_conversation(branch=False)
    conv["mapping"]["u2"]["message"]["content"]["parts"] = [123, None, "hello"]  # was: stored as "hello"
    store, report = ingest(home, tmp_path, "parts", [conv], "chatgpt")
    assert report.dead_letter_reasons == {"bad_shape": 1}
    (letter,) = rows(store, dead_letters, dead_letters.c.dead_letter_id)
    assert letter["reason"] == "content part 0 is int, neither text nor an attachment"
    assert "hello" not in [m["text"] for m in rows(store, messages, messages.c.position)]


def test_epoch_numbers_are_seconds_unless_they_cannot_be(home, tmp_path):
    lines = jsonl_rows()
    lines[0]["created_at"] = 253402300799  # 9999-12-31 in seconds: was read as milliseconds (1978)
    lines[2]["created_at"] = 1_711_965_600_000  # milliseconds: no date in seconds
    store, _ = ingest(home, tmp_path, "ep", lines, "jsonl")
    by_ref = {m["source_ref"]: m for m in rows(store, messages, messages.c.position)}
    assert str(by_ref["m1"]["created_at"]) == "9999-12-31 23:59:59"
    assert str(by_ref["m3"]["created_at"]) == "2024-04-01 10:00:00"
    assert by_ref["m3"]["attributes"]["time_unit"] == "ms" and "time_unit" not in by_ref["m1"]["attributes"]


def test_a_repeated_non_uuid_message_id_is_a_dead_letter(home, tmp_path):
    conv = chatgpt_conversation(branch=False)
    conv["mapping"]["a2"]["message"]["id"] = "msg-1"
    conv["mapping"]["u2"]["message"]["id"] = "msg-1"  # was: both stored under derived ids
    store, report = ingest(home, tmp_path, "dup", [conv], "chatgpt")
    assert report.dead_letter_reasons == {"duplicate_id": 1}
    assert rows(store, dead_letters, dead_letters.c.dead_letter_id)[0]["source_ref"] == "c1/a2"


def test_structure_is_not_a_dead_letter_and_a_reingest_never_adds_dead_letters(home, tmp_path):
    """The issue 17 case: hidden system nodes counted as dead letters, 3 → 7 after one more conversation."""
    convs = [chatgpt_conversation(f"c{i}") for i in range(3)]
    for conv in convs:
        conv["mapping"]["u2b"]["message"]["content"]["parts"] = [""]  # one real dead letter each
    path = write_json(tmp_path / "export.json", convs)
    store = home.corpus("ex")
    first = ingest_file(store, path, "chatgpt")
    assert first.structural == 3 and first.dead_letter_reasons == {"empty_text": 3}
    again = ingest_file(store, path, "chatgpt")
    more = copy.deepcopy(convs[0])
    more["conversation_id"] = "c3"
    grown = ingest_file(store, write_json(path, [*convs, more]), "chatgpt")
    assert again.dead_lettered == 3 and grown.dead_lettered == 4 and grown.structural == 4
    assert len(rows(store, dead_letters, dead_letters.c.dead_letter_id)) == 4


def test_an_older_store_loses_the_dead_letter_uniqueness(home, tmp_path):
    store = home.corpus("old")
    store.dir.mkdir(parents=True)
    legacy = sqlite3.connect(store.dir / "source.db")
    legacy.execute(
        "CREATE TABLE dead_letters (dead_letter_id INTEGER PRIMARY KEY, corpus VARCHAR(200) NOT NULL, "
        "file_sha256 VARCHAR(64) NOT NULL, source_ref TEXT NOT NULL, reason_code VARCHAR(48) NOT NULL, "
        "reason TEXT NOT NULL, payload_excerpt TEXT NOT NULL, recorded_at DATETIME NOT NULL, "
        "CONSTRAINT uq_dead_letter UNIQUE (file_sha256, source_ref, reason_code))"
    )
    legacy.execute("CREATE INDEX ix_dead_letters_reason ON dead_letters (reason_code)")
    legacy.execute("INSERT INTO dead_letters VALUES (1, 'old', 'f', 'r', 'x', 'why', '', '2024-01-01')")
    legacy.commit()
    legacy.close()
    bad = [{"id": "x", "conversation_id": "c", "role": "robot", "text": "t", "created_at": 1}] * 2
    good = {"id": "y", "conversation_id": "c", "role": "user", "text": "t", "created_at": 2}
    report = ingest_file(store, write_jsonl(tmp_path / "old.jsonl", [*bad, good]), "jsonl")
    assert report.dead_lettered == 2 and balanced(report)
    with store.source.connect() as conn:
        ddl = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'dead_letters'").scalar()
        kept = conn.exec_driver_sql("SELECT count(*) FROM dead_letters WHERE file_sha256 = 'f'").scalar()
    assert "uq_dead_letter" not in ddl and kept == 1  # rebuilt without it, earlier rows kept


def test_every_reason_names_values_without_quoting_texts(home, tmp_path):
    text = "I feel anxious about the exam tomorrow"
    lines = [
        {"id": "m1", "conversation_id": "c", "role": text, "text": "x", "created_at": 1},
        {"id": text, "conversation_id": "c", "role": "user", "text": "y", "created_at": 2},
        {"id": "m3", "conversation_id": "c", "role": "user", "text": "z", "created_at": 3},
        {"id": "m3", "conversation_id": "c", "role": "user", "text": "z", "created_at": 4},
    ]
    store, _ = ingest(home, tmp_path, "q", lines, "jsonl")
    reasons = [dl["reason"] for dl in rows(store, dead_letters, dead_letters.c.dead_letter_id)]
    assert reasons == ["unknown role a string of 38 chars", "message id 'm3' repeats"]
    assert json.dumps(reasons).count("anxious") == 0


def test_a_record_the_parser_loses_fails_the_accounting(home, tmp_path, monkeypatch):
    """The census counts the file without the parser: a parser that silently drops a record (the bug class
    the accounting exists for) leaves the check red, naming how many records are unaccounted."""
    from memory_core import ingest
    from memory_core.ingest.jsonl import parse_jsonl
    from memory_core.ingest.records import ParsedConversation

    def lossy(path, max_chars, record_id=None):
        for item in parse_jsonl(path, max_chars, record_id=record_id):
            if isinstance(item, ParsedConversation) and len(item.messages) > 1:
                item.messages.pop()  # one message vanishes, as with a key the parser did not know
            yield item

    monkeypatch.setitem(ingest.PARSERS, "jsonl", lossy)
    path = write_jsonl(tmp_path / "lossy.jsonl", jsonl_rows())
    store = home.corpus("lossy")
    report = ingest_file(store, path, "jsonl")
    result = contracts.input_accounting(store)
    assert not balanced(report)
    assert result.passed is False and result.figures["unaccounted"] == 1, result.figures
