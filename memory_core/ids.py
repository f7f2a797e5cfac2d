"""Deterministic identifiers: re-ingesting or re-deriving the same thing gives the same id."""

from __future__ import annotations

import hashlib
import json
import re
import uuid

# Fixed namespace of Memory OS ids (uuid5 of the project URL namespace); never change it.
MEMORY_OS_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://memory-os.dev/ids")
_SEP = "\x1f"


def stable_uuid(*parts: object) -> str:
    """UUIDv5 of the parts joined with a separator that never occurs in ids."""
    return str(uuid.uuid5(MEMORY_OS_NAMESPACE, _SEP.join(str(p) for p in parts)))


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def as_uuid(value: str) -> str | None:
    """The canonical form of `value` when it is a UUID, else None."""
    if isinstance(value, str) and _CANONICAL_UUID.fullmatch(value):
        return value  # already canonical: the common case, no parse
    try:
        return str(uuid.UUID(str(value)))
    except (ValueError, AttributeError, TypeError):
        return None


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sha256_json(value: object) -> str:
    """Hash of a JSON-able value in canonical form (sorted keys, no whitespace)."""
    return sha256_text(
        json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    )
