"""Fuzzing the four parsers: any input either fails as a whole with InputError (nothing written, no message
text in the error) or is ingested with every record stored, dead-lettered or structural - against two
counts the parser does not make: the census's and the generator's own - and the stored data keeps its
contract.

The generators put wrong types at every field (ids, roles, texts, times, parents, parts, sessions),
extreme numbers (1e20, -1e20, ±Infinity, NaN, 10**30, epoch milliseconds, the years 1 and 9999) and cycles
in every parent field, plus repeated ids, conversations and questions.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from memory_core.errors import InputError
from memory_core.ingest.loader import ingest_file
from memory_core.store.db import MemoryHome, dispose_engines
from memory_core.store.schema import dead_letters, messages
from tests.samples import chatgpt_conversation, jsonl_rows, locomo_sample, longmemeval_record

FUZZ = settings(
    max_examples=int(os.environ.get("MEMORY_OS_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# a text no error, reason or log line may ever quote
PRIVATE = "zqxj private diary words"

extreme_numbers = st.sampled_from(
    [1e20, -1e20, math.inf, -math.inf, math.nan, 10**30, -(10**30), 1.7e12, 253402300799, -62135596800, 0, -1]
)
wrong_types = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    extreme_numbers,
    st.lists(st.sampled_from(["p1", "a", 3]), max_size=2),
    st.dictionaries(st.sampled_from(["x", "id"]), st.integers(0, 2), max_size=2),
)


def mostly(good, bad=wrong_types):
    """A field that is usually well-formed: one draw in six is `bad`, so most files mix stored records with
    dead ones."""
    return st.integers(0, 5).flatmap(lambda i: bad if i == 0 else good)


bad_texts = st.one_of(st.just(""), st.just("   "), wrong_types)
texts = mostly(
    st.one_of(st.text(min_size=1, max_size=40), st.sampled_from(["I went to Kyoto.", PRIVATE])), bad_texts
)
roles = mostly(
    st.sampled_from(["user", "assistant"]),
    st.one_of(st.sampled_from(["system", "tool", "critic", ""]), wrong_types),
)
bad_times = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    extreme_numbers,
    st.text(max_size=12),
    st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59", "1e20"]),
    wrong_types,
)
times = mostly(
    st.one_of(st.integers(1_600_000_000, 1_800_000_000), st.just("2024-01-01T00:00:00Z")), bad_times
)
ids = mostly(st.sampled_from(["a", "b", "c", "d", "root"]), st.one_of(st.text(max_size=4), wrong_types))


def parents(node_ids: list[str]):
    """A parent field: a node id (cycles arise whenever ids point at each other), a ghost, or any type."""
    return mostly(
        st.one_of(st.none(), st.sampled_from([*node_ids, "ghost"]) if node_ids else st.just("ghost"))
    )


@st.composite
def chatgpt_exports(draw):
    """(export, records): `records` counted while generating, by the format's rule (a node with a message,
    or a node that is not an object; a conversation element without a mapping counts one)."""
    convs, records = [], 0
    for _ in range(draw(st.integers(0, 3))):
        in_mapping = 0
        node_ids = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "root"]), max_size=6, unique=True))
        mapping = {}
        for nid in node_ids:
            if draw(st.integers(0, 9)) == 0:
                mapping[nid] = draw(wrong_types.filter(lambda v: not isinstance(v, dict)))  # not an object
                in_mapping += 1
                continue
            parts = st.lists(
                mostly(texts, st.fixed_dictionaries({"content_type": st.just("image")})),
                min_size=1,
                max_size=3,
            )
            message = draw(
                mostly(
                    st.fixed_dictionaries(
                        {
                            "id": mostly(
                                st.one_of(st.uuids().map(str), st.sampled_from(["m1", "m2"])), wrong_types
                            ),
                            "author": mostly(
                                st.fixed_dictionaries({"role": roles, "name": texts}),
                                st.one_of(wrong_types, st.text(max_size=3)),
                            ),
                            "content": mostly(
                                st.one_of(
                                    st.fixed_dictionaries({"content_type": st.just("text"), "parts": parts}),
                                    st.fixed_dictionaries({"content_type": st.just("code"), "text": texts}),
                                ),
                                st.one_of(
                                    st.fixed_dictionaries(
                                        {"content_type": wrong_types, "parts": wrong_types}
                                    ),
                                    texts,
                                ),
                            ),
                            "create_time": times,
                            "metadata": mostly(
                                st.just({}),
                                st.one_of(
                                    st.just({"is_visually_hidden_from_conversation": True}), wrong_types
                                ),
                            ),
                        }
                    ),
                    st.one_of(st.none(), wrong_types.filter(lambda v: v is not None)),
                )
            )
            in_mapping += message is not None
            children = draw(
                st.one_of(st.lists(st.sampled_from([*node_ids, "ghost"]), max_size=3), wrong_types)
            )
            mapping[nid] = {
                "id": nid,
                "message": message,
                "parent": draw(parents(node_ids)),
                "children": children,
            }
        conv = {
            "title": draw(texts),
            "create_time": draw(times),
            "update_time": draw(times),
            "mapping": mapping,
            "current_node": draw(mostly(st.sampled_from([*node_ids, "zz"]))),
            "conversation_id": draw(mostly(st.sampled_from(["c1", "c2", "c3"]))),
        }
        if draw(st.integers(0, 9)) == 0:  # an element that is no conversation: one record
            conv = draw(st.one_of(texts, st.just({"title": "no mapping"}), st.just({"mapping": [1]})))
            in_mapping = 1
        records += in_mapping
        convs.append(conv)
    return convs, records


@st.composite
def lme_files(draw):
    questions, records = [], 0
    for n in range(draw(st.integers(1, 3))):
        rec = longmemeval_record(draw(st.sampled_from([f"q{n}", "q0"])))
        sessions = []
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.integers(0, 6)) == 0:  # not a list of turns: one record (a list: its elements)
                garbage = draw(wrong_types)
                sessions.append(garbage)
                records += len(garbage) if isinstance(garbage, list) else 1
                continue
            turns = draw(
                st.lists(
                    mostly(
                        st.fixed_dictionaries(
                            {"role": roles, "content": texts, "has_answer": mostly(st.booleans())}
                        ),
                        texts,
                    ),
                    max_size=4,
                )
            )
            sessions.append(turns)
            records += len(turns)
        rec["haystack_sessions"] = sessions
        rec["haystack_session_ids"] = draw(mostly(st.lists(ids, max_size=4)))
        rec["haystack_dates"] = draw(
            mostly(
                st.lists(
                    mostly(
                        st.sampled_from(["2023/05/20 (Sat) 02:21", "2024/01/02 (Tue) 10:00"]),
                        st.one_of(st.text(max_size=8), wrong_types),
                    ),
                    max_size=4,
                )
            )
        )
        if draw(st.integers(0, 6)) == 0:  # not a list of sessions: one record (a list: one per element)
            garbage = draw(wrong_types)
            rec["haystack_sessions"] = garbage
            records -= sum(len(s) if isinstance(s, list) else 1 for s in sessions)
            records += len(garbage) if isinstance(garbage, list) else 1
        questions.append(rec)
    return questions, records


SESSION_KEYS = ["session_1", "session_01", "Session_2", "SESSION_3", "session_10"]


@st.composite
def locomo_files(draw):
    sample, records = locomo_sample(), 0
    conv = sample["conversation"]
    for key in [k for k in list(conv) if k.startswith("session_")]:
        del conv[key]
    conv["speaker_b"] = draw(mostly(st.just("Bob")))
    for key in draw(st.lists(st.sampled_from(SESSION_KEYS), max_size=3, unique=True)):
        turns = draw(
            mostly(
                st.lists(
                    mostly(
                        st.fixed_dictionaries(
                            {
                                "speaker": mostly(
                                    st.sampled_from(["Ann", "Bob"]), st.one_of(st.just(""), wrong_types)
                                ),
                                "dia_id": ids,
                                "text": texts,
                                "blip_caption": texts,
                                "img_url": mostly(st.just(["http://x/a.jpg"])),
                            }
                        ),
                        texts,
                    ),
                    max_size=4,
                )
            )
        )
        conv[key] = turns
        records += len(turns) if isinstance(turns, list) else 1
        conv[f"{key}_date_time"] = draw(
            mostly(
                st.sampled_from(["1:56 pm on 8 May, 2023", "8 May, 2023"]),
                st.one_of(st.text(max_size=8), wrong_types),
            )
        )
    if draw(st.integers(0, 9)) == 0:
        return [draw(texts)], 1
    return [sample], records


@st.composite
def jsonl_files(draw):
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        row = {
            "id": draw(ids),
            "conversation_id": draw(mostly(st.sampled_from(["c1", "c2"]))),
            "role": draw(roles),
            "author": draw(texts),
            "text": draw(texts),
            "created_at": draw(times),
            "parent_id": draw(ids),  # "a" ↔ "b" ↔ ... : parent cycles
            "title": draw(texts),
        }
        junk = st.text(max_size=10).filter(lambda t: t.strip() and "\n" not in t and "\r" not in t)
        rows.append(draw(mostly(st.just(json.dumps(row)), junk)))
    return rows, len(rows)


def _check(path: Path, fmt: str, expected_records: int | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryHome.resolve(tmp).corpus("fuzz")
        try:
            try:
                report = ingest_file(store, path, fmt)
            except InputError as exc:
                assert PRIVATE not in str(exc)
                with store.source.connect() as conn:
                    assert conn.execute(select(func.count()).select_from(messages)).scalar_one() == 0
                return
            assert "parse_error" not in report.dead_letter_reasons  # a parser bug, caught by its shield
            accounted = report.stored + report.dead_lettered + report.structural
            assert report.records_in == report.records_counted == accounted
            if expected_records is not None:
                assert report.records_counted == expected_records
            parent = aliased(messages)
            with store.source.connect() as conn:
                stored = conn.execute(select(func.count()).select_from(messages)).scalar_one()
                assert stored == report.stored
                assert (
                    conn.execute(select(func.count()).where(messages.c.created_at.is_(None))).scalar_one()
                    == 0
                )
                dangling = conn.execute(
                    select(func.count())
                    .select_from(messages.outerjoin(parent, messages.c.parent_id == parent.c.message_id))
                    .where(messages.c.parent_id.is_not(None), parent.c.message_id.is_(None))
                ).scalar_one()
                assert dangling == 0
                reasons = conn.execute(select(dead_letters.c.reason)).scalars().all()
                assert len(reasons) == report.dead_lettered  # one row per dead record
                assert not any(PRIVATE in r for r in reasons)  # reasons never quote a message
            again = ingest_file(store, path, fmt)  # idempotent; dead letters replaced, not added to
            assert again.inserted == 0 and again.stored == report.stored
            with store.source.connect() as conn:
                rows = conn.execute(select(func.count()).select_from(dead_letters)).scalar_one()
            assert rows == report.dead_lettered
        finally:
            dispose_engines()


def _write(tmp_path_factory, name, content) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@FUZZ
@given(chatgpt_exports())
def test_fuzz_chatgpt(tmp_path_factory, drawn):
    export, records = drawn
    _check(_write(tmp_path_factory, "c.json", json.dumps(export)), "chatgpt", records)


@FUZZ
@given(lme_files())
def test_fuzz_longmemeval(tmp_path_factory, drawn):
    questions, records = drawn
    _check(_write(tmp_path_factory, "l.json", json.dumps(questions)), "longmemeval", records)


@FUZZ
@given(locomo_files())
def test_fuzz_locomo(tmp_path_factory, drawn):
    samples, records = drawn
    _check(_write(tmp_path_factory, "m.json", json.dumps(samples)), "locomo", records)


@FUZZ
@given(jsonl_files())
def test_fuzz_jsonl(tmp_path_factory, drawn):
    lines, records = drawn
    _check(_write(tmp_path_factory, "j.jsonl", "\n".join(lines)), "jsonl", records)


@FUZZ
@given(
    st.sampled_from(["chatgpt", "longmemeval", "locomo", "jsonl"]),
    st.integers(0, 10_000),
    st.binary(max_size=8),
    st.booleans(),
)
def test_fuzz_byte_damage(tmp_path_factory, fmt, cut, junk, truncate):
    """Real-shaped files, truncated or with bytes spliced in: an InputError or a clean ingest, never a crash."""
    good = {
        "chatgpt": json.dumps([chatgpt_conversation()]),
        "longmemeval": json.dumps([longmemeval_record()]),
        "locomo": json.dumps([locomo_sample()]),
        "jsonl": "\n".join(json.dumps(r) for r in jsonl_rows()),
    }[fmt].encode()
    pos = cut % (len(good) + 1)
    damaged = good[:pos] if truncate else good[:pos] + junk + good[pos:]
    _check(_write(tmp_path_factory, "d.jsonl" if fmt == "jsonl" else "d.json", damaged), fmt)
