"""The pipeline's side of the read cache (`memory_query.read_cache`): the `indexes` asset saves the message
table, the segment map and the lexical indexes, the `graph` asset the graph's walks, each computed by a reader that does not use
the cache (the same code a reader falls back to, so a cached part is exactly what the stores give).

Each part's stamp is read before its content: a write landing in between makes the part stale (ignored),
never fresh with old content.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from memory_core.reports import Figures
from memory_core.store.db import file_stamps
from memory_query.adjacency import graph_adjacency, graph_stamp
from memory_query.read_cache import SegmentMembers, encode_lexicon, part_path, save_part
from memory_query.reader import CorpusReader


@dataclass
class ReadCacheReport:
    """What one writer saved: part → rows and bytes."""

    rows: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_metadata(self) -> Figures:
        return {
            "read_cache_parts": sorted(self.rows),
            "read_cache_rows": dict(self.rows),
            "read_cache_bytes": sum(self.bytes.values()),
            "read_cache_seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        parts = ", ".join(f"{p} ({n} rows)" for p, n in self.rows.items()) or "nothing"
        return f"read cache: {parts} in {self.seconds:.2f} s"

    def _saved(self, store, part: str, stamp, arrays, rows: int) -> None:
        self.bytes[part] = save_part(store, part, stamp, arrays).stat().st_size
        self.rows[part] = rows


def write_table_cache(store) -> ReadCacheReport:
    """The `messages`, `segments` and (once the index files exist) `lexicon` parts, from the stores and
    files as they are now."""
    started, report = time.perf_counter(), ReadCacheReport()
    reader = CorpusReader(store, use_read_cache=False)
    try:
        source, both = reader.store_stamp("source"), reader.store_stamp("source", "staging")
        table = reader.messages()
        report._saved(store, "messages", source, table.to_arrays(), len(table))
        members = reader.segment_messages()
        report._saved(store, "segments", both, SegmentMembers.encode(members), len(members))
        files = reader.lexicon_files()
        if all(f.exists() for f in files):
            lexical_stamp = file_stamps(files)
            lexicon, _ = reader.lexicon()
            docs = lexicon.messages.n_docs + lexicon.conversations.n_docs + lexicon.concepts.n_docs
            report._saved(store, "lexicon", lexical_stamp, encode_lexicon(lexicon), docs)
    finally:
        reader.close()
    report.seconds = time.perf_counter() - started
    return report


def write_graph_cache(store) -> ReadCacheReport:
    """The `adjacency` part from the embedded graph as it is now (call it after the graph is closed); a
    corpus without a loaded graph gets none (its walks come from the tables), and a stale one is removed."""
    started, report = time.perf_counter(), ReadCacheReport()
    reader = CorpusReader(store, use_read_cache=False)
    try:
        stamp = graph_stamp(reader)
        graph = reader.graph()
        if graph is None:
            part_path(store, "adjacency").unlink(missing_ok=True)
        else:
            adjacency = graph_adjacency(graph)
            rows = sum(len(v) for v in adjacency.related.values()) + len(adjacency.next_of)
            rows += sum(len(v) for v in adjacency.evidence.values())
            report._saved(store, "adjacency", stamp, adjacency.to_arrays(), rows)
    finally:
        reader.close()
    report.seconds = time.perf_counter() - started
    return report
