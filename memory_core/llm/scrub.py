"""Secrets out of texts that leave the process (errors, residuals, logs): a secret is replaced where it
appears whole, never inside a longer token, and only a secret long enough to be one is looked for - a key
"x" must not turn "Extra" into "E***tra"."""

from __future__ import annotations

import re

MIN_SECRET_CHARS = 8  # shorter values cannot be real keys and would match ordinary words
MASK = "***"
# characters a token (a key, a word) is made of: a secret bordered by one of them is part of something else
_TOKEN_CHAR = r"[A-Za-z0-9_\-]"


def scrub(text: str, *secrets: str | None) -> str:
    """`text` with every whole occurrence of each real secret (at least `MIN_SECRET_CHARS` long) masked."""
    for secret in secrets:
        if not secret or len(secret) < MIN_SECRET_CHARS or secret not in text:
            continue
        text = re.sub(rf"(?<!{_TOKEN_CHAR}){re.escape(secret)}(?!{_TOKEN_CHAR})", MASK, text)
    return text
