"""The `messages` stage: a corpus's registered input file into its source store, and the stage report."""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.corpora import CorpusSource
from memory_core.ingest.loader import IngestReport, ingest_file
from memory_core.reports import Figures, share
from memory_core.store.db import CorpusStore
from memory_core.store.stats import corpus_stats


@dataclass
class MessagesReport:
    """One ingestion of a corpus: the file's accounting and the corpus's totals after it."""

    source: CorpusSource
    ingest: IngestReport
    messages_total: int
    conversations_total: int
    dead_letters_total: int

    def as_metadata(self) -> Figures:
        r = self.ingest
        return {
            "source_path": self.source.path,
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
    """Ingest the corpus's registered file (see `ingest_file`) and count what the corpus now holds."""
    report = ingest_file(store, source.path, source.source_format, source.record_id, max_message_chars)
    stats = corpus_stats(store)
    return MessagesReport(
        source=source,
        ingest=report,
        messages_total=stats["messages"],
        conversations_total=stats["conversations"],
        dead_letters_total=stats["dead_letters"],
    )
