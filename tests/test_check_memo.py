"""A contract's kept result (memory_core.store.memo): the ActionLog replay is not repeated while its tables
and its code stand, and is repeated as soon as one of them moves."""

from __future__ import annotations

import json

from sqlalchemy import update

from memory_core.concepts import action_log
from memory_core.concepts.checks import action_log_replays
from memory_core.memory_loop.loop import consolidate
from memory_core.store import memo
from memory_core.store.schema import canonical_concepts
from tests.loop_samples import build_corpus
from tests.test_memory_loop import DOG_MENTIONS, DOG_TURNS, HASHING, _embedder


def _dogs(home, tmp_path):
    dogs = home.corpus("dogs")
    build_corpus(dogs, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS)
    consolidate(dogs, _embedder(home), HASHING)
    return dogs


def _replays_counted(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = action_log.replay_differences

    def counted(conn):
        calls.append(1)
        return real(conn)

    monkeypatch.setattr(action_log, "replay_differences", counted)
    return calls


def test_the_replay_stands_while_its_tables_stand_and_runs_again_when_a_row_changes(
    home, tmp_path, monkeypatch
):
    dogs = _dogs(home, tmp_path)
    replays = _replays_counted(monkeypatch)
    first = action_log_replays(dogs)
    assert first.passed and first.figures["replayed_now"] and first.figures["concepts"] > 0
    again = action_log_replays(dogs)
    assert len(replays) == 1 and again.passed and not again.figures["replayed_now"]
    assert {k: v for k, v in again.figures.items() if k != "replayed_now"} == {
        k: v for k, v in first.figures.items() if k != "replayed_now"
    }
    # a row changed in place (no log row says so): the counter moved, the replay runs and finds it
    with dogs.staging.begin() as conn:
        cid = conn.execute(canonical_concepts.select().limit(1)).first().concept_id
        conn.execute(
            update(canonical_concepts).where(canonical_concepts.c.concept_id == cid).values(title="Rex")
        )
    damaged = action_log_replays(dogs)
    assert len(replays) == 2 and damaged.figures["replayed_now"]
    assert not damaged.passed and damaged.figures["examples"] == [cid]
    assert not action_log_replays(dogs).passed and len(replays) == 3  # a failure is judged afresh


def test_changed_code_an_old_or_unreadable_memo_replays_and_a_read_only_store_keeps_nothing(
    home, tmp_path, monkeypatch
):
    dogs = _dogs(home, tmp_path)
    replays = _replays_counted(monkeypatch)
    assert action_log_replays(dogs).passed
    memo_file = dogs.dir / memo.MEMO_DIR / "action_log_replays.json"
    assert json.loads(memo_file.read_text())["result"]["evidence_equal"] is True
    monkeypatch.setattr(memo, "code_digest", lambda modules, *settings: "another version of the replay")
    assert action_log_replays(dogs).figures["replayed_now"] and len(replays) == 2
    kept = json.loads(memo_file.read_text())
    memo_file.write_text(json.dumps({**kept, "at": kept["at"] - memo.MAX_AGE_S - 1}))
    assert action_log_replays(dogs).figures["replayed_now"] and len(replays) == 3  # a day old: afresh
    assert not action_log_replays(dogs).figures["replayed_now"] and len(replays) == 3
    memo_file.write_text("{not json")
    assert action_log_replays(dogs).figures["replayed_now"] and len(replays) == 4
    memo_file.unlink()
    reader = home.corpus("dogs", readonly=True)
    assert action_log_replays(reader).figures["replayed_now"] and not memo_file.exists()
