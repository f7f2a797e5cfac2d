"""Fuzzing the four parsers: any input either fails as a whole with InputError (nothing written) or is
ingested with every record stored or dead-lettered, and the stored data keeps its contract."""

from __future__ import annotations

import json
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
from memory_core.store.schema import messages
from tests.samples import chatgpt_conversation, jsonl_rows, locomo_sample, longmemeval_record

FUZZ = settings(
    max_examples=int(os.environ.get("MEMORY_OS_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

texts = st.one_of(
    st.text(max_size=40),
    st.just(""),
    st.just("   "),
    st.integers(),
    st.none(),
    st.lists(st.text(max_size=5), max_size=2),
)
roles = st.sampled_from(["user", "assistant", "system", "tool", "critic", "", None, 7])
times = st.one_of(
    st.none(),
    st.integers(-10, 2_000_000_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.just("2024-01-01T00:00:00Z"),
)
ids = st.one_of(st.sampled_from(["a", "b", "c", "d", "root"]), st.text(max_size=4), st.none())


@st.composite
def chatgpt_exports(draw):
    convs = []
    for _ in range(draw(st.integers(0, 3))):
        node_ids = draw(
            st.lists(st.sampled_from(["a", "b", "c", "d", "e", "root"]), min_size=0, max_size=6, unique=True)
        )
        mapping = {}
        for nid in node_ids:
            message = draw(
                st.one_of(
                    st.none(),
                    st.fixed_dictionaries(
                        {
                            "author": st.one_of(
                                st.fixed_dictionaries({"role": roles}), st.none(), st.text(max_size=3)
                            ),
                            "content": st.one_of(
                                st.fixed_dictionaries(
                                    {"content_type": st.just("text"), "parts": st.lists(texts, max_size=3)}
                                ),
                                st.fixed_dictionaries({"content_type": st.just("code"), "text": texts}),
                                texts,
                            ),
                            "create_time": times,
                        }
                    ),
                )
            )
            parent = draw(st.one_of(st.none(), st.sampled_from(node_ids + ["ghost"])))
            children = draw(st.lists(st.sampled_from(node_ids + ["ghost"]), max_size=3))
            mapping[nid] = {"id": nid, "message": message, "parent": parent, "children": children}
        conv = {
            "title": draw(texts),
            "mapping": mapping,
            "current_node": draw(st.one_of(st.none(), st.sampled_from(node_ids + ["zz"]))),
        }
        conv["conversation_id"] = draw(st.sampled_from(["c1", "c2", "c3"]))
        convs.append(draw(st.one_of(st.just(conv), texts)))
    return convs


@st.composite
def lme_records(draw):
    rec = longmemeval_record("q1")
    sessions = []
    for _ in range(draw(st.integers(0, 3))):
        sessions.append(
            draw(
                st.lists(
                    st.one_of(st.fixed_dictionaries({"role": roles, "content": texts}), texts), max_size=4
                )
            )
        )
    rec["haystack_sessions"] = draw(st.one_of(st.just(sessions), texts))
    rec["haystack_session_ids"] = draw(st.lists(ids, max_size=4))
    rec["haystack_dates"] = draw(
        st.lists(st.one_of(st.just("2023/05/20 (Sat) 02:21"), st.text(max_size=8), st.none()), max_size=4)
    )
    return [rec]


@st.composite
def locomo_samples(draw):
    sample = locomo_sample()
    conv = sample["conversation"]
    for n in (1, 2):
        conv[f"session_{n}"] = draw(
            st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {"speaker": st.sampled_from(["Ann", "Bob", "", 3]), "dia_id": ids, "text": texts}
                    ),
                    texts,
                ),
                max_size=4,
            )
        )
        conv[f"session_{n}_date_time"] = draw(
            st.one_of(st.just("1:56 pm on 8 May, 2023"), st.text(max_size=8), st.none())
        )
    return [draw(st.one_of(st.just(sample), texts))]


@st.composite
def jsonl_lines(draw):
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        row = {
            "id": draw(ids),
            "conversation_id": draw(st.one_of(st.sampled_from(["c1", "c2"]), st.none())),
            "role": draw(roles),
            "text": draw(texts),
            "created_at": draw(times),
            "parent_id": draw(ids),
        }
        rows.append(draw(st.one_of(st.just(json.dumps(row)), st.text(max_size=10))))
    return rows


def _check(path: Path, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryHome.resolve(tmp).corpus("fuzz")
        try:
            try:
                report = ingest_file(store, path, fmt)
            except InputError:
                with store.source.connect() as conn:
                    assert conn.execute(select(func.count()).select_from(messages)).scalar_one() == 0
                return
            assert report.records_in == report.stored + report.dead_lettered
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
            again = ingest_file(store, path, fmt)  # idempotent
            assert again.inserted == 0 and again.stored == report.stored
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
def test_fuzz_chatgpt(tmp_path_factory, export):
    _check(_write(tmp_path_factory, "c.json", json.dumps(export)), "chatgpt")


@FUZZ
@given(lme_records())
def test_fuzz_longmemeval(tmp_path_factory, records):
    _check(_write(tmp_path_factory, "l.json", json.dumps(records)), "longmemeval")


@FUZZ
@given(locomo_samples())
def test_fuzz_locomo(tmp_path_factory, samples):
    _check(_write(tmp_path_factory, "m.json", json.dumps(samples)), "locomo")


@FUZZ
@given(jsonl_lines())
def test_fuzz_jsonl(tmp_path_factory, lines):
    _check(_write(tmp_path_factory, "j.jsonl", "\n".join(lines)), "jsonl")


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
