"""What `corpus add` checks before it registers anything, and deleting a corpus's built data."""

from __future__ import annotations

import shutil

from memory_core.corpora import CorpusSource
from memory_core.errors import InputError
from memory_core.ingest.validation import scan_file
from memory_core.store.db import STORES, MemoryHome, dispose_engines, drop_server_databases


def check_sources(home: MemoryHome, sources: list[CorpusSource], replace: bool) -> list[CorpusSource]:
    """Read each planned input through the build's own parser (one scan per file and record) and refuse a
    name that is registered to another input unless `replace`; returns the sources that replace one."""
    replaced = []
    for s in sources:
        row = home.registration(s.name)
        if row is None:
            continue
        same = (row["source_format"], row["path"], (row["options"] or {}).get("record_id")) == (
            s.source_format,
            s.path,
            s.record_id,
        )
        if same:
            continue
        if not replace:
            raise InputError(
                f"corpus {s.name!r} is already registered to {row['source_format']} {row['path']}; "
                "pass --replace to re-point it (its built data is deleted) or choose another name"
            )
        replaced.append(s)
    # a split benchmark file is scanned once as a whole, not once per record
    records = {s.record_id for s in sources}
    scans = {(s.path, s.source_format, None if len(records) > 1 else s.record_id) for s in sources}
    for path, fmt, record_id in sorted(scans, key=str):
        scan_file(path, fmt, record_id)
    return replaced


def delete_corpus_data(home: MemoryHome, source: CorpusSource | str) -> None:
    """Delete a corpus's stores (its files, or its databases on a server), graph and indexes (waiting for
    a running writer to finish first)."""
    store = home.corpus(source if isinstance(source, str) else source.name)
    with store.write_lock():
        pass
    dispose_engines()  # no pooled connection may keep writing to a deleted database
    shutil.rmtree(store.dir, ignore_errors=True)
    if home.url_template:
        failed = drop_server_databases([store.url(s) for s in STORES])
        if failed:
            raise InputError(f"could not drop database(s) of corpus {store.name!r}: {'; '.join(failed)}; try again")  # fmt: skip
