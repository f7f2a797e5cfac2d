"""Write parsed conversations to a corpus's source store: incremental, accounted, all-or-nothing per file.

One file is one transaction: a file that turns out to be unreadable half-way (truncated JSON) leaves the
store exactly as it was. Inside a good file every record is stored, dead-lettered with its reason (one
`dead_letters` row per record) or counted as structure (ChatGPT's hidden system nodes), and
`records_in == stored + dead_lettered + structural` is recorded per file beside `records_counted`, the
census's independent count of the file's records (`census.py`), which the accounting check compares. A
re-ingest of the corpus's file replaces that file's earlier dead letters instead of adding to them. A
conversation whose content hash is unchanged is skipped; a changed one is updated in place with prior
message texts kept in `message_revisions` (the source text is never silently overwritten).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import Connection, delete, insert, select, update

from memory_core.errors import InputError
from memory_core.ids import as_uuid, sha256_text, stable_uuid
from memory_core.ingest import PARSERS
from memory_core.ingest.census import count_records
from memory_core.ingest.records import (
    DEFAULT_MAX_MESSAGE_CHARS,
    DeadLetter,
    ParsedConversation,
    ParsedMessage,
    clean_json,
    clean_text,
    excerpt,
    invalid_text_reason,
    label,
)
from memory_core.ingest.validation import require_ingestible
from memory_core.store.db import CorpusStore, bulk_insert, utcnow
from memory_core.store.schema import conversations, dead_letters, ingest_files, message_revisions, messages

BATCH = 5000


@dataclass
class IngestReport:
    path: str
    source_format: str
    file_sha256: str
    records_in: int = 0
    stored: int = 0
    structural: int = 0  # records of the export's structure (hidden system nodes): neither stored nor dead
    records_counted: int = 0  # the census's own count of the file's records (independent of the parser)
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    dead_lettered: int = 0
    conversations_in: int = 0
    conversations_new: int = 0
    conversations_changed: int = 0
    conversations_unchanged: int = 0
    derived_times: int = 0
    seconds: float = 0.0
    dead_letter_reasons: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fp:
        for chunk in iter(lambda: fp.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def conversation_hash(conv: ParsedConversation, content_shas: dict[str, str] | None = None) -> str:
    """Content hash of a conversation version; message texts enter through their own sha256."""
    shas = content_shas or {m.source_ref: sha256_text(m.text) for m in conv.messages}
    digest = hashlib.sha256()
    put = digest.update
    put(f"{conv.title}\x1e{conv.created_at}".encode("utf-8", "surrogatepass"))
    for m in conv.messages:
        attrs = m.attributes_json if m.attributes_json is not None else _attributes_json(m)
        line = f"\x1e{m.source_ref}\x1f{m.role}\x1f{m.author}\x1f{shas[m.source_ref]}\x1f{m.created_at}\x1f{m.time_derived}\x1f{m.parent_ref}\x1f{attrs}"
        put(line.encode("utf-8", "surrogatepass"))
    for ref, code in sorted((d.source_ref, d.reason_code) for d in conv.dead_letters):
        put(f"\x1d{ref}\x1f{code}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _attributes_json(m: ParsedMessage) -> str:
    """The attributes in canonical JSON (for the content hash), after undecodable input in them was made
    storable. `ensure_ascii` escapes lone surrogates as \\udXXX, so only such attributes take the slow path."""
    if not m.attributes:
        return ""
    text = json.dumps(m.attributes, sort_keys=True, default=str)
    if "\\ud" in text:
        m.attributes = clean_json(m.attributes)
        text = json.dumps(m.attributes, sort_keys=True, default=str)
    return text


def _parent_first(msgs: list[ParsedMessage]) -> list[ParsedMessage]:
    """Messages ordered so a parent is written before its children. A cycle in parent ids is cut at the
    edge that closes it (that message keeps its would-be parent in `parent_cycle`)."""
    by_ref = {m.source_ref: m for m in msgs}
    placed: set[str] = set()
    out: list[ParsedMessage] = []
    for msg in msgs:
        chain: list[ParsedMessage] = []
        node, visiting = msg, set()
        while node is not None and node.source_ref not in placed:
            if node.source_ref in visiting:  # chain[-1]'s parent is already on this chain: cut that edge
                last = chain[-1]
                last.attributes["parent_cycle"] = last.parent_ref
                last.parent_ref = None
                break
            visiting.add(node.source_ref)
            chain.append(node)
            node = by_ref.get(node.parent_ref) if node.parent_ref else None
        for item in reversed(chain):
            if item.source_ref not in placed:
                placed.add(item.source_ref)
                out.append(item)
    return out


class _Writer:
    def __init__(self, conn: Connection, store: CorpusStore, report: IngestReport, checks_needed: bool):
        self.conn = conn
        self.corpus = store.name
        self.report = report
        self.now = utcnow()
        self.checks_needed = checks_needed  # False on an empty store: no cross-run id collisions possible
        self.seen_message_ids: set[str] = set()
        self.seen_conversations: set[str] = set()
        self.existing = {
            r.source_ref: r
            for r in conn.execute(
                select(
                    conversations.c.source_ref, conversations.c.conversation_id, conversations.c.source_sha256
                ).where(conversations.c.corpus == self.corpus)
            )
        }
        self.pending_dead: list[dict] = []
        self.repeats: dict[str, int] = {}  # conversation id → occurrences so far in this file
        # new conversations are written in batches (few statements, one transaction for the file)
        self.pending_conversations: list[dict] = []
        self.pending_messages: list[dict] = []

    def flush(self) -> None:
        bulk_insert(self.conn, conversations, self.pending_conversations)
        bulk_insert(self.conn, messages, self.pending_messages)
        self.pending_conversations, self.pending_messages = [], []
        self.flush_dead()

    def dead_letter(self, dl: DeadLetter) -> None:
        """One dead record: counted and queued as its own row."""
        self.report.dead_lettered += 1
        self.report.dead_letter_reasons[dl.reason_code] = (
            self.report.dead_letter_reasons.get(dl.reason_code, 0) + 1
        )
        self.pending_dead.append(
            dict(
                corpus=self.corpus,
                file_sha256=self.report.file_sha256,
                source_ref=clean_text(dl.source_ref),
                reason_code=dl.reason_code,
                reason=clean_text(dl.reason),
                payload_excerpt=dl.payload_excerpt,
                recorded_at=self.now,
            )
        )
        if len(self.pending_dead) >= BATCH:
            self.flush_dead()

    def flush_dead(self) -> None:
        bulk_insert(self.conn, dead_letters, self.pending_dead)
        self.pending_dead = []

    def repeated_conversation(self, conv: ParsedConversation) -> None:
        """A conversation id seen before in this file: every record of the repeat is a dead letter (its
        own, or `duplicate_id` for those that would have been stored); structural ones stay structure."""
        n = self.repeats[conv.source_ref] = self.repeats.get(conv.source_ref, 1) + 1
        prefix = f"{conv.source_ref}#{n}"
        why = f"conversation id {label(conv.source_ref)} appears more than once in the file (occurrence {n})"
        for msg in conv.messages:
            self.dead_letter(DeadLetter(f"{prefix}/{msg.source_ref}", "duplicate_id", why, excerpt(msg.text)))
        for dl in conv.dead_letters:
            ref = dl.source_ref.removeprefix(f"{conv.source_ref}/")
            self.dead_letter(DeadLetter(f"{prefix}/{ref}", dl.reason_code, dl.reason, dl.payload_excerpt))
        self.report.structural += len(conv.structural)

    def conversation(self, conv: ParsedConversation) -> None:
        report = self.report
        report.conversations_in += 1
        report.records_in += conv.records_seen
        if conv.source_ref in self.seen_conversations:
            self.repeated_conversation(conv)
            return
        self.seen_conversations.add(conv.source_ref)
        report.structural += len(conv.structural)
        # ids and metadata keep undecodable input as escapes; message texts are checked by the parsers
        conv.source_ref, conv.title = clean_text(conv.source_ref), clean_text(conv.title)
        conv.attributes = clean_json(conv.attributes)
        conv_id = as_uuid(conv.source_id) if conv.source_id else None
        conv_id = conv_id or stable_uuid(self.corpus, "conversation", conv.source_ref)
        kept: list[ParsedMessage] = []
        ids: dict[str, str] = {}
        used: set[str] = set()
        for msg in conv.messages:
            dead_ref = msg.dead_ref or f"{conv.source_ref}/{msg.source_ref}"
            bad = invalid_text_reason(msg.source_ref) or invalid_text_reason(msg.author)
            if bad:
                conv.dead_letters.append(
                    DeadLetter(
                        clean_text(dead_ref), "invalid_utf8", f"id or author: {bad}", excerpt(msg.text)
                    )
                )
                continue
            msg.attributes_json = _attributes_json(msg)
            mid = (as_uuid(msg.source_id) if msg.source_id else None) or stable_uuid(
                self.corpus, conv.source_ref, msg.source_ref
            )
            if mid in self.seen_message_ids or mid in used:
                conv.dead_letters.append(
                    DeadLetter(
                        dead_ref,
                        "duplicate_id",
                        f"message id {mid} already used by another record",
                        excerpt(msg.text, 200),
                    )
                )
                continue
            ids[msg.source_ref] = mid
            used.add(mid)
            kept.append(msg)
        if self.checks_needed and kept:
            taken = {
                r.message_id
                for r in self.conn.execute(
                    select(messages.c.message_id).where(
                        messages.c.message_id.in_(list(ids.values())), messages.c.conversation_id != conv_id
                    )
                )
            }
            if taken:
                for msg in [m for m in kept if ids[m.source_ref] in taken]:
                    conv.dead_letters.append(
                        DeadLetter(
                            msg.dead_ref or f"{conv.source_ref}/{msg.source_ref}",
                            "duplicate_id",
                            f"message id {ids[msg.source_ref]} already belongs to another conversation",
                            excerpt(msg.text, 200),
                        )
                    )
                kept = [m for m in kept if ids[m.source_ref] not in taken]
        ids = {m.source_ref: ids[m.source_ref] for m in kept}
        for msg in kept:
            if msg.parent_ref is not None and msg.parent_ref not in ids:
                msg.attributes["missing_parent"] = msg.parent_ref
                msg.parent_ref = None
        conv.messages = kept
        for dl in conv.dead_letters:
            self.dead_letter(dl)
        self.seen_message_ids.update(ids[m.source_ref] for m in kept)
        report.stored += len(kept)
        report.derived_times += sum(1 for m in kept if m.time_derived)
        content_shas = {m.source_ref: sha256_text(m.text) for m in kept}
        sha = conversation_hash(conv, content_shas)
        prior = self.existing.get(conv.source_ref)
        if prior is not None and prior.source_sha256 == sha:
            report.conversations_unchanged += 1
            report.unchanged += len(kept)
            return
        ordered = _parent_first(kept)
        position = {m.source_ref: i for i, m in enumerate(kept)}
        rows = [
            dict(
                message_id=ids[m.source_ref],
                conversation_id=conv_id,
                parent_id=ids.get(m.parent_ref) if m.parent_ref else None,
                role=m.role,
                author=m.author,
                text=m.text,
                created_at=m.created_at,
                time_derived=m.time_derived,
                position=position[m.source_ref],
                content_sha256=content_shas[m.source_ref],
                source_ref=m.source_ref,
                attributes=m.attributes,
            )
            for m in ordered
        ]
        times = [m.created_at for m in kept]
        conv_row = dict(
            conversation_id=conv_id,
            corpus=self.corpus,
            source_ref=conv.source_ref,
            title=conv.title,
            created_at=conv.created_at or (min(times) if times else self.now),
            source_format=report.source_format,
            source_sha256=sha,
            message_count=len(kept),
            attributes=conv.attributes,
            ingested_at=self.now,
        )
        if prior is None:
            report.conversations_new += 1
            self.pending_conversations.append(conv_row)
            self.pending_messages.extend(rows)
            report.inserted += len(rows)
            if len(self.pending_messages) >= BATCH:
                self.flush()
        else:
            report.conversations_changed += 1
            self.flush()
            self._update(prior.conversation_id, conv_row, rows)

    def _update(self, conv_id: str, conv_row: dict, rows: list[dict]) -> None:
        self.conn.execute(
            update(conversations).where(conversations.c.conversation_id == conv_id).values(**conv_row)
        )
        old = {
            r.message_id: r
            for r in self.conn.execute(
                select(
                    messages.c.message_id, messages.c.text, messages.c.content_sha256, messages.c.attributes
                ).where(messages.c.conversation_id == conv_id)
            )
        }
        new_ids = set()
        for row in rows:
            mid = row["message_id"]
            new_ids.add(mid)
            prior = old.get(mid)
            if prior is None:
                self.conn.execute(insert(messages), [row])
                self.report.inserted += 1
                continue
            if prior.content_sha256 != row["content_sha256"]:
                self.conn.execute(
                    insert(message_revisions),
                    [
                        dict(
                            message_id=mid,
                            text=prior.text,
                            content_sha256=prior.content_sha256,
                            superseded_at=self.now,
                        )
                    ],
                )
            values = {k: v for k, v in row.items() if k != "message_id"}
            self.conn.execute(update(messages).where(messages.c.message_id == mid).values(**values))
            self.report.updated += 1
        for mid, prior in old.items():
            if mid not in new_ids and not (prior.attributes or {}).get("removed_from_source"):
                attrs = dict(prior.attributes or {}, removed_from_source=self.now.isoformat())
                self.conn.execute(
                    update(messages).where(messages.c.message_id == mid).values(attributes=attrs)
                )


def ingest_file(
    store: CorpusStore,
    path: str | Path,
    source_format: str,
    record_id: str | None = None,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
    sha256: str | None = None,
) -> IngestReport:
    """Parse `path` and write it to `store`'s source database (`sha256`: its content's, when the caller has
    just hashed it). Raises InputError for an unusable file."""
    path = Path(path)
    if source_format not in PARSERS:
        raise InputError(f"unknown format {source_format!r}; choose one of {', '.join(PARSERS)}")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    started = time.perf_counter()
    report = IngestReport(
        path=str(path), source_format=source_format, file_sha256=sha256 or file_sha256(path)
    )
    parser = PARSERS[source_format]
    engine = store.source
    started_at = utcnow()
    with engine.begin() as conn:
        empty = conn.execute(select(messages.c.message_id).limit(1)).first() is None
        writer = _Writer(conn, store, report, checks_needed=not empty)
        try:
            # this file's dead letters from an earlier ingest are replaced, never added to
            earlier = select(ingest_files.c.file_sha256).where(ingest_files.c.path == str(path))
            conn.execute(
                delete(dead_letters).where(
                    (dead_letters.c.file_sha256 == report.file_sha256)
                    | dead_letters.c.file_sha256.in_(earlier)
                )
            )
            for item in parser(path, max_message_chars, record_id=record_id):
                if isinstance(item, DeadLetter):
                    report.records_in += 1
                    writer.dead_letter(item)
                else:
                    writer.conversation(item)
            report.records_counted = count_records(path, source_format, record_id)
        except RecursionError as exc:
            raise InputError(f"{path}: JSON nested too deeply to read") from exc
        # a file with nothing to store fails before anything is committed (the rule `corpus add` applies)
        require_ingestible(path, source_format, report.stored, report.dead_letter_reasons)
        writer.flush()
        report.seconds = time.perf_counter() - started
        conn.execute(
            insert(ingest_files),
            [
                dict(
                    corpus=store.name,
                    path=str(path),
                    source_format=source_format,
                    file_sha256=report.file_sha256,
                    records_in=report.records_in,
                    stored=report.stored,
                    unchanged=report.unchanged,
                    dead_lettered=report.dead_lettered,
                    conversations_in=report.conversations_in,
                    conversations_changed=report.conversations_new + report.conversations_changed,
                    started_at=started_at,
                    finished_at=utcnow(),
                    structural=report.structural,
                    records_counted=report.records_counted,
                )
            ],
        )
    return report
