"""Corpus registration: which input file (and which record of it) a corpus is built from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memory_core.corpus_names import unknown_corpus
from memory_core.errors import InputError
from memory_core.ingest import FORMATS, detect_format, record_ids
from memory_core.store.db import MemoryHome, validate_corpus_name


@dataclass(frozen=True)
class CorpusSource:
    name: str
    source_format: str
    path: str
    record_id: str | None = None


def _safe_suffix(record_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", record_id)


def plan_corpora(
    name: str,
    path: str | Path,
    source_format: str | None = None,
    record_id: str | None = None,
    split: bool | None = None,
) -> list[CorpusSource]:
    """The corpora a file becomes.

    LongMemEval: one question = one corpus. With `record_id` (a question_id) just that one; otherwise every
    question becomes `NAME__<question_id>`. LoCoMo: all samples in one corpus unless `record_id` (a
    sample_id) picks one or `split` makes each sample `NAME__<sample_id>`.
    """
    validate_corpus_name(name)
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise InputError(f"{file}: no such file")
    fmt = source_format or detect_format(file)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if record_id is not None:
        ids = record_ids(file, fmt)
        if ids and record_id not in ids:
            raise InputError(f"{file}: no record with id {record_id!r} (the file has {len(ids)})")
        return [CorpusSource(name, fmt, str(file), record_id)]
    if fmt == "longmemeval" and split is not False:
        ids = record_ids(file, fmt)
        if len(ids) == 1:
            return [CorpusSource(name, fmt, str(file), ids[0])]
        return [CorpusSource(f"{name}__{_safe_suffix(i)}", fmt, str(file), i) for i in ids]
    if fmt == "locomo" and split:
        return [CorpusSource(f"{name}__{_safe_suffix(i)}", fmt, str(file), i) for i in record_ids(file, fmt)]
    return [CorpusSource(name, fmt, str(file), None)]


def register(home: MemoryHome, sources: list[CorpusSource]) -> None:
    for src in sources:
        home.register(
            src.name, src.source_format, src.path, {"record_id": src.record_id} if src.record_id else {}
        )


def registered_source(home: MemoryHome, name: str) -> CorpusSource:
    row = home.registration(name)
    if row is None:
        raise unknown_corpus(home, name)
    return CorpusSource(
        row["name"], row["source_format"], row["path"], (row["options"] or {}).get("record_id")
    )
