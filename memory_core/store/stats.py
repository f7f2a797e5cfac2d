"""Row counts and dead-letter reasons of a corpus: what `memory-os stats` prints."""

from __future__ import annotations

from sqlalchemy import func, select

from memory_core.store.db import CorpusStore
from memory_core.store.schema import METADATA_BY_STORE, dead_letters, ingest_files, messages


def corpus_stats(store: CorpusStore) -> dict:
    store = store.read_only()  # counting never creates a store
    tables: dict[str, dict[str, int]] = {}
    for store_name, metadata in METADATA_BY_STORE.items():
        engine = store.engine(store_name)
        with engine.connect() as conn:
            tables[store_name] = {
                name: conn.execute(select(func.count()).select_from(table)).scalar_one()
                for name, table in sorted(metadata.tables.items())
            }
    with store.source.connect() as conn:
        reasons = [
            {"reason_code": r.reason_code, "count": r.n, "example": r.reason}
            for r in conn.execute(
                select(
                    dead_letters.c.reason_code,
                    func.count().label("n"),
                    func.min(dead_letters.c.reason).label("reason"),
                )
                .group_by(dead_letters.c.reason_code)
                .order_by(func.count().desc())
            )
        ]
        derived = conn.execute(select(func.count()).where(messages.c.time_derived.is_(True))).scalar_one()
        null_times = conn.execute(select(func.count()).where(messages.c.created_at.is_(None))).scalar_one()
        missing_ref = conn.execute(
            select(func.count()).where((messages.c.source_ref.is_(None)) | (messages.c.source_ref == ""))
        ).scalar_one()
        last_file = (
            conn.execute(select(ingest_files).order_by(ingest_files.c.file_id.desc()).limit(1))
            .mappings()
            .first()
        )
    total = tables["source"]["messages"]
    return {
        "corpus": store.name,
        "tables": tables,
        "messages": total,
        "conversations": tables["source"]["conversations"],
        "dead_letters": tables["source"]["dead_letters"],
        "dead_letter_reasons": reasons,
        "derived_timestamp_share": round(derived / total, 4) if total else 0.0,
        "null_timestamps": null_times,
        "messages_without_source_ref": missing_ref,
        "last_ingest": {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in last_file.items()}
        if last_file
        else None,
    }
