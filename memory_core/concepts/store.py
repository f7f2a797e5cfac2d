"""The concept store: `canonical_concepts` rows read and written as `ConceptHypothesis`, and their
`concept_evidence` rows (one per evidence span: the EVIDENCE_FOR edge, queryable without unpacking JSON).

Table and object hold the same fields in the same order. The one difference is `merged_into`: NULL in the
table, "" on the object when the concept is not merged. The JSON form (`concept_to_json`: the row with times
as ISO strings) is what gardener snapshots and the ActionLog's whole-row patches hold.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from sqlalchemy import Column, Connection, Text, bindparam, case, cast, delete, func, insert, select, update
from sqlalchemy.sql.dml import Update
from sqlalchemy.types import JSON

from memory_core.ontology.concepts import ConceptHypothesis, EvidenceSpan
from memory_core.store.db import CorpusStore
from memory_core.store.fingerprint import fingerprint
from memory_core.store.schema import canonical_concepts, concept_evidence

CONCEPT_COLUMNS = [c.name for c in canonical_concepts.c]
EVIDENCE_COLUMNS = [c.name for c in concept_evidence.c if c.name != "concept_id"]
# the stage the memory loop's residuals (rejected mentions) are recorded under
CONSOLIDATION_STAGE = "memory_loop"
_CHUNK = 500
_NO_EVIDENCE = frozenset({"evidence_spans"})


def concept_from_row(row: Mapping) -> ConceptHypothesis:
    return ConceptHypothesis.model_validate(dict(row))


def concept_to_row(concept: ConceptHypothesis, exclude: frozenset[str] = frozenset()) -> dict:
    row = concept.model_dump(exclude=exclude or None)
    row["merged_into"] = row["merged_into"] or None
    return row


def concept_to_json(concept: ConceptHypothesis | None) -> dict | None:
    """The row as JSON (times as ISO strings); None stays None (a concept that does not exist)."""
    if concept is None:
        return None
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in concept_to_row(concept).items()}


def concept_from_json(row: Mapping | None) -> ConceptHypothesis | None:
    return None if row is None else concept_from_row(row)


def read_concepts(
    conn: Connection,
    ids: Iterable[str] | None = None,
    states: Sequence[str] | None = None,
    order_by: Sequence[Column] = (canonical_concepts.c.concept_id,),
) -> dict[str, ConceptHypothesis]:
    """Concepts by id (all, or `ids`, read in chunks), of the given states, in `order_by` order."""
    cc = canonical_concepts.c
    query = select(canonical_concepts).order_by(*order_by)
    if states is not None:
        query = query.where(cc.state.in_(list(states)))
    if ids is None:
        return {r["concept_id"]: concept_from_row(r) for r in conn.execute(query).mappings()}
    wanted = list(dict.fromkeys(ids))
    out: dict[str, ConceptHypothesis] = {}
    for i in range(0, len(wanted), _CHUNK):
        for r in conn.execute(query.where(cc.concept_id.in_(wanted[i : i + _CHUNK]))).mappings():
            out[r["concept_id"]] = concept_from_row(r)
    return out


def insert_concepts(conn: Connection, concepts: Iterable[ConceptHypothesis]) -> None:
    rows = [concept_to_row(c) for c in concepts]
    if rows:
        conn.execute(insert(canonical_concepts), rows)


def update_concepts(
    conn: Connection, concepts: Iterable[ConceptHypothesis], stored_spans: Mapping[str, int] | None = None
) -> None:
    """Rewrite the stored rows of existing concepts (every column), one statement per shape.

    With `stored_spans` (concept → how many of its evidence spans its row holds already, spans only ever
    appended since) the row's `evidence_spans` gets just the newer spans appended in SQL: writing a concept
    then costs what changed, not all its evidence (the memory loop touches a popular concept in every batch,
    and re-encoding its whole evidence each time grew with concepts × mentions). The stored text is the
    same as a full rewrite's (`json.dumps` of the list)."""
    full, fields_only, appending = [], [], []
    for c in concepts:
        stored = None if stored_spans is None else stored_spans.get(c.concept_id)
        if stored is None or stored > len(c.evidence_spans):
            full.append({f"b_{k}": v for k, v in concept_to_row(c).items()})
            continue
        params = {f"b_{k}": v for k, v in concept_to_row(c, _NO_EVIDENCE).items()}
        if stored == len(c.evidence_spans):
            fields_only.append(params)
        else:
            new = [s.model_dump() for s in c.evidence_spans[stored:]]
            appending.append({**params, "b_new_spans": json.dumps(new)})
    statements = _update_statements(conn.dialect.name)
    for kind, rows in (("full", full), ("fields_only", fields_only), ("appending", appending)):
        if rows:
            conn.execute(statements[kind], rows)


@functools.cache
def _update_statements(dialect: str) -> dict[str, Update]:
    """The three row updates of `update_concepts`, built once per dialect: building one anew each call made
    SQLAlchemy derive its cache key from fresh column types every time (~6 % of a consolidation)."""
    columns = [name for name in CONCEPT_COLUMNS if name != "concept_id"]
    scalar = [name for name in columns if name != "evidence_spans"]
    where = canonical_concepts.c.concept_id == bindparam("b_concept_id")
    values = {name: bindparam(f"b_{name}") for name in scalar}
    appended = _appended_json(dialect, bindparam("b_new_spans", type_=Text))
    return {
        "full": update(canonical_concepts)
        .where(where)
        .values({**values, "evidence_spans": bindparam("b_evidence_spans")}),
        "fields_only": update(canonical_concepts).where(where).values(values),
        "appending": update(canonical_concepts).where(where).values({**values, "evidence_spans": appended}),
    }


def _appended_json(dialect: str, new):
    """`evidence_spans` with the JSON list `new` appended, as text: "[a, b]" + "[c]" → "[a, b, c]"."""
    # trailing whitespace trimmed first: the splice drops the list's closing "]", which must be the last char
    stored = func.rtrim(cast(canonical_concepts.c.evidence_spans, Text), " \t\r\n", type_=Text)
    joined = (
        func.substr(stored, 1, func.length(stored) - 1, type_=Text)
        .concat(case((stored == "[]", ""), else_=", "))
        .concat(func.substr(new, 2, type_=Text))
    )
    # SQLite keeps JSON as text (a CAST to JSON would be NUMERIC affinity there); Postgres needs the type
    return joined if dialect == "sqlite" else cast(joined, JSON)


def delete_concepts(conn: Connection, ids: Iterable[str]) -> None:
    ids = list(ids)
    if ids:
        conn.execute(delete(canonical_concepts).where(canonical_concepts.c.concept_id.in_(ids)))


def evidence_row(concept_id: str, mention_id: str, span: EvidenceSpan) -> dict:
    """The `concept_evidence` row (the EVIDENCE_FOR edge) of one evidence span."""
    return {
        "concept_id": concept_id,
        "mention_id": mention_id,
        "message_id": span.message_id,
        "segment_id": span.source_id,
        "span_start": span.char_start,
        "span_end": span.char_end,
        "text": span.text,
        "confidence": span.confidence,
        "status": "active",
    }


def read_evidence(conn: Connection, ids: Iterable[str]) -> dict[str, list[dict]]:
    """concept -> its `concept_evidence` rows (without concept_id), in stored order."""
    wanted = list(dict.fromkeys(ids))
    out: dict[str, list[dict]] = {c: [] for c in wanted}
    for i in range(0, len(wanted), _CHUNK):
        for r in conn.execute(
            select(concept_evidence).where(concept_evidence.c.concept_id.in_(wanted[i : i + _CHUNK]))
        ).mappings():
            out[r["concept_id"]].append({k: r[k] for k in EVIDENCE_COLUMNS})
    return out


def replace_evidence(conn: Connection, concept_id: str, rows: Iterable[dict]) -> None:
    """Make `rows` (without concept_id) the concept's whole evidence."""
    conn.execute(delete(concept_evidence).where(concept_evidence.c.concept_id == concept_id))
    rows = [{"concept_id": concept_id, **r} for r in rows]
    if rows:
        conn.execute(insert(concept_evidence), rows)


def content_hash(store: CorpusStore) -> str:
    """sha256 of the content of canonical_concepts and concept_evidence, independent of row order: each
    table's digest is kept with its write counter (memory_core.store.fingerprint), so a gardener run's four
    looks (before and after triage, before and after refactoring) read a table only once it was written."""
    return fingerprint(store, (("staging", "canonical_concepts"), ("staging", "concept_evidence"))).digest


def table_hash(store: CorpusStore, tables: Iterable) -> str:
    """sha256 of whole staging tables (every column, rows in primary-key or full-column order)."""
    digest = hashlib.sha256()
    with store.staging.connect() as conn:
        for table in tables:
            _digest_rows(digest, conn, table, list(table.primary_key.columns) or list(table.c))
    return digest.hexdigest()


def _digest_rows(digest, conn: Connection, table, order: list) -> None:
    digest.update(table.name.encode())
    for row in conn.execute(select(table).order_by(*order)).mappings():
        digest.update(json.dumps(dict(row), sort_keys=True, default=str, ensure_ascii=False).encode() + b"\n")
