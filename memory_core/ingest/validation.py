"""Whether an input file can be ingested at all, decided by the parser the build uses (not a second one).

`corpus add` scans the file with `scan_file` before registering it, and `ingest_file` applies the same rule
(`require_ingestible`) to what it parsed, so a file is refused with the same one line at registration and at
build time: a file that cannot be read, or one whose every record is a dead letter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memory_core.errors import InputError
from memory_core.ingest import PARSERS
from memory_core.ingest.records import DEFAULT_MAX_MESSAGE_CHARS, DeadLetter


@dataclass
class InputScan:
    """What the parser found in a file, without writing anything."""

    path: str
    source_format: str
    conversations: int = 0
    messages: int = 0
    dead_letter_reasons: Counter = field(default_factory=Counter)

    @property
    def dead_letters(self) -> int:
        return sum(self.dead_letter_reasons.values())


def require_ingestible(path: str | Path, source_format: str, messages: int, reasons: dict[str, int]) -> None:
    """Refuse an input in which the parser found no message to store, naming the dead-letter reasons."""
    if messages:
        return
    if not reasons:
        raise InputError(f"{path}: nothing to ingest as {source_format} (no conversation with a message)")
    why = ", ".join(f"{code} ×{n}" for code, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    raise InputError(
        f"{path}: nothing ingestible as {source_format}: all {sum(reasons.values())} record(s) are dead "
        f"letters ({why}); is --format right?"
    )


def scan_file(
    path: str | Path,
    source_format: str,
    record_id: str | None = None,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
) -> InputScan:
    """Run the format's parser over the whole file; raise InputError when the build would refuse it."""
    if source_format not in PARSERS:
        raise InputError(f"unknown format {source_format!r}; choose one of {', '.join(PARSERS)}")
    scan = InputScan(str(path), source_format)
    try:
        for item in PARSERS[source_format](Path(path), max_message_chars, record_id=record_id):
            if isinstance(item, DeadLetter):
                scan.dead_letter_reasons[item.reason_code] += 1
                continue
            scan.conversations += 1
            scan.messages += len(item.messages)
            scan.dead_letter_reasons.update(dl.reason_code for dl in item.dead_letters)
    except RecursionError as exc:
        raise InputError(f"{path}: JSON nested too deeply to read") from exc
    require_ingestible(path, source_format, scan.messages, scan.dead_letter_reasons)
    return scan
