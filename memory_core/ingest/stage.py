"""The `messages` stage: a corpus's registered input file into its source store, and the stage report.

A file ingested before is not parsed again while it and the source store are as that ingest left them: the
same content (sha256), format, record and length limit, the same ingest code, and no write to any source
table since (memory_core.store.memo). Its report is then the one a re-ingest of the same file gives: every
message unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import memory_core.ids
import memory_core.ingest
import memory_core.store.db
from memory_core.corpora import CorpusSource
from memory_core.ingest.loader import IngestReport, file_sha256, ingest_file
from memory_core.reports import Figures, share
from memory_core.store import memo
from memory_core.store.db import CorpusStore
from memory_core.store.schema import source_metadata
from memory_core.store.stats import corpus_stats

_MEMO = "ingest"
SOURCE_TABLES = tuple(("source", t.name) for t in source_metadata.sorted_tables)


@dataclass
class MessagesReport:
    """One ingestion of a corpus: the file's accounting and the corpus's totals after it."""

    source: CorpusSource
    ingest: IngestReport
    messages_total: int
    conversations_total: int
    dead_letters_total: int
    parsed: bool = True  # False: the file was as its last ingest left it, and not read again

    def as_metadata(self) -> Figures:
        r = self.ingest
        return {
            "source_path": self.source.path,
            "file_parsed": self.parsed,
            "source_format": self.source.source_format,
            "records_in": r.records_in,
            "records_counted": r.records_counted,
            "stored": r.stored,
            "structural": r.structural,
            "inserted": r.inserted,
            "updated": r.updated,
            "unchanged": r.unchanged,
            "dead_lettered": r.dead_lettered,
            "dead_letter_reasons": [
                {"reason": k, "count": v} for k, v in sorted(r.dead_letter_reasons.items())
            ],
            "conversations_new": r.conversations_new,
            "conversations_changed": r.conversations_changed,
            "conversations_unchanged": r.conversations_unchanged,
            "derived_timestamp_share": share(r.derived_times, r.stored),
            "messages_total": self.messages_total,
            "conversations_total": self.conversations_total,
            "dead_letters_total": self.dead_letters_total,
            "seconds": round(r.seconds, 3),
            "messages_per_second": round(r.stored / r.seconds, 1) if r.seconds else 0.0,
        }

    def summary(self) -> str:
        r = self.ingest
        structure = f", {r.structural} structural" if r.structural else ""
        return (
            f"{self.source.name}: {r.records_in} records in, {r.stored} stored ({r.inserted} new, "
            f"{r.updated} updated, {r.unchanged} unchanged), {r.dead_lettered} dead-lettered{structure}"
        )


def ingest_source(store: CorpusStore, source: CorpusSource, max_message_chars: int) -> MessagesReport:
    """Ingest the corpus's registered file (see `ingest_file`), unless it is as its last ingest left it, and
    count what the corpus now holds."""
    started = time.perf_counter()
    path = Path(source.path)
    sha = file_sha256(path) if path.is_file() else None  # (no file: ingest_file says so)
    kept = memo.kept(store, _MEMO, _ingest_key(store, source, max_message_chars, sha)) if sha else None
    if kept is not None:
        report = replace(IngestReport(**kept), seconds=time.perf_counter() - started)
    else:
        report = ingest_file(
            store, source.path, source.source_format, source.record_id, max_message_chars, sha256=sha
        )
        # kept under the content it hashed (a file replaced meanwhile is another key: parsed next time)
        after = _ingest_key(store, source, max_message_chars, report.file_sha256)
        memo.keep(store, _MEMO, after, _as_reingested(report).as_dict())
    stats = corpus_stats(store)
    return MessagesReport(
        source=source,
        ingest=report,
        messages_total=stats["messages"],
        conversations_total=stats["conversations"],
        dead_letters_total=stats["dead_letters"],
        parsed=kept is None,
    )


def _ingest_key(store: CorpusStore, source: CorpusSource, max_message_chars: int, sha256: str) -> str:
    """The key of ingesting the file content `sha256` with these settings into the source store as it is."""
    settings = (sha256, source.source_format, source.record_id, max_message_chars)
    # the parsers and the loader, and the ids and writes they make
    code = memo.code_digest([memory_core.ingest, memory_core.ids, memory_core.store.db], *settings)
    return memo.tables_key(store, SOURCE_TABLES, code)


def _as_reingested(report: IngestReport) -> IngestReport:
    """What ingesting the same file again reports: every conversation and message unchanged."""
    return replace(
        report,
        inserted=0,
        updated=0,
        unchanged=report.inserted + report.updated + report.unchanged,
        conversations_new=0,
        conversations_changed=0,
        conversations_unchanged=report.conversations_in,
    )
