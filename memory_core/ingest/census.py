"""An independent count of the records in an input file, for the accounting check.

The parsers report what they saw; a parser that skips part of its input (an unrecognised session key, a
second question, a part it drops) would still balance its own books. So the census reads the raw structure
again, with none of the parsers' code, and counts the records the format defines:

- chatgpt: each node of a conversation's `mapping` that holds a `message` (or is not an object at all);
  a conversation element that is not one (no `mapping` object) is one record. Nodes without a message
  (the client root) are structure, not records.
- longmemeval: each turn of each session of each question (the question `record_id`, or every question);
  a session that is not a list, or a question that is not one, is one record.
- locomo: each turn under every `session_<n>` key of each sample (any case, any zero padding); a session
  that is not a list, or a sample without a `conversation` object, is one record.
- jsonl: each non-blank line (with `record_id`, the lines of other conversations do not count).

`records in = stored + dead-lettered + structural` must hold against this count.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from memory_core.ingest.jsonstream import iter_json_array

SESSION_KEY = re.compile(r"session_(\d+)", re.IGNORECASE)


def _id_text(value: object) -> str | None:
    if value is None or value == "" or isinstance(value, bool | dict | list):
        return None
    return str(value)


def chatgpt_records(raw: object) -> int:
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        return 1
    return sum(
        1 for node in raw["mapping"].values() if not isinstance(node, dict) or node.get("message") is not None
    )


def lme_records(raw: object) -> int:
    if not isinstance(raw, dict) or not isinstance(raw.get("haystack_sessions"), list):
        return 1
    return sum(len(s) if isinstance(s, list) else 1 for s in raw["haystack_sessions"])


def locomo_records(raw: object) -> int:
    if not isinstance(raw, dict) or not isinstance(raw.get("conversation"), dict):
        return 1
    return sum(
        len(v) if isinstance(v, list) else 1
        for k, v in raw["conversation"].items()
        if isinstance(k, str) and SESSION_KEY.fullmatch(k)
    )


ELEMENT_RECORDS = {"chatgpt": chatgpt_records, "longmemeval": lme_records, "locomo": locomo_records}
# the id a `record_id` names: the element's own, or (benchmarks) its position when it has none
_ELEMENT_ID = {
    "chatgpt": lambda r, i: _id_text(r.get("conversation_id") or r.get("id")),
    "longmemeval": lambda r, i: _id_text(r.get("question_id")) or f"question[{i}]",
    "locomo": lambda r, i: _id_text(r.get("sample_id")) or f"sample[{i}]",
}


def count_records(path: Path, source_format: str, record_id: str | None = None) -> int:
    """How many records `path` holds for a corpus built from it (see the module docstring)."""
    if source_format == "jsonl":
        return _jsonl_records(path, record_id)
    count = ELEMENT_RECORDS[source_format]
    element_id = _ELEMENT_ID[source_format]
    total = 0
    for index, raw in enumerate(iter_json_array(path, allow_object=source_format == "locomo")):
        if record_id is not None and not (isinstance(raw, dict) and element_id(raw, index) == record_id):
            continue
        total += count(raw)
    return total


def _jsonl_records(path: Path, record_id: str | None) -> int:
    total = 0
    with path.open("rb") as fp:
        for number, raw in enumerate(fp, start=1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if not raw.strip():
                continue
            if record_id is not None:
                try:
                    value = json.loads(raw.decode("utf-8"))
                except ValueError:  # undecodable or malformed: a record of whichever conversation
                    value = None
                conversation = _id_text(value.get("conversation_id")) if isinstance(value, dict) else None
                if conversation is not None and conversation != record_id:
                    continue
            total += 1
    return total
