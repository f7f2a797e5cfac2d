"""Contracts of the `messages` stage, evaluated on the source store (the asset checks wrap these)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from memory_core.reports import CheckResult
from memory_core.store.db import CorpusStore
from memory_core.store.schema import ingest_files, messages


def no_null_timestamps(store: CorpusStore) -> CheckResult:
    """Every stored message has a timestamp (derived ones count: they are never NULL)."""
    with store.source.connect() as conn:
        nulls = conn.execute(select(func.count()).where(messages.c.created_at.is_(None))).scalar_one()
        total = conn.execute(select(func.count()).select_from(messages)).scalar_one()
    return CheckResult(nulls == 0, {"null_timestamps": nulls, "messages": total})


def no_dangling_parents(store: CorpusStore) -> CheckResult:
    """Every parent_id names a stored message."""
    parent = aliased(messages)
    with store.source.connect() as conn:
        dangling = conn.execute(
            select(func.count())
            .select_from(messages.outerjoin(parent, messages.c.parent_id == parent.c.message_id))
            .where(messages.c.parent_id.is_not(None), parent.c.message_id.is_(None))
        ).scalar_one()
    return CheckResult(dangling == 0, {"dangling_parent_ids": dangling})


def input_accounting(store: CorpusStore) -> CheckResult:
    """The last ingested file accounts for every record: records in = stored + dead-lettered + structural,
    where records in is the census's count of the file, independent of the parser (`census.py`); the
    parser's own count must agree with it."""
    with store.source.connect() as conn:
        last = (
            conn.execute(select(ingest_files).order_by(ingest_files.c.file_id.desc()).limit(1))
            .mappings()
            .first()
        )
    if last is None:
        return CheckResult(False, {"problem": "no file ingested yet"})
    structural = last["structural"] or 0
    counted = last["records_counted"]
    if counted is None:  # ingested by an older version, before the census
        counted = last["records_in"]
    accounted = last["stored"] + last["dead_lettered"] + structural
    return CheckResult(
        counted == accounted and last["records_in"] == counted,
        {
            "records_counted": counted,
            "records_in": last["records_in"],
            "stored": last["stored"],
            "dead_lettered": last["dead_lettered"],
            "structural": structural,
            "unaccounted": counted - accounted,
        },
    )
