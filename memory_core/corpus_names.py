"""What to say when a corpus name is not registered: the registered names (the first few), and the closest
to what was typed, so a typo is one glance from its fix."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from memory_core.errors import CorpusNotFoundError
from memory_core.store.db import MemoryHome

NAMES_LISTED = 8


def closest_names(name: str, registered: Sequence[str], n: int = 3) -> list[str]:
    """The registered names most like `name`, case ignored: the close spellings (difflib's ratio ≥ 0.6), the
    closest first, then those it begins (a split benchmark's NAME__<id> corpora), each group by name."""
    wanted = name.casefold()
    ratio = {r: difflib.SequenceMatcher(None, wanted, r.casefold()).ratio() for r in registered}
    close = sorted((r for r, v in ratio.items() if v >= 0.6), key=lambda r: (-ratio[r], r))
    prefixed = sorted(r for r in registered if r.casefold().startswith(wanted) and r.casefold() != wanted)
    return list(dict.fromkeys(close + prefixed))[:n]


def unknown_corpus_message(home: MemoryHome, name: str, registered: Sequence[str] | None = None) -> str:
    """One line: `name` is not registered under the home, what is, and the closest name."""
    names = list(registered) if registered is not None else [r["name"] for r in home.registrations()]
    where = f"corpus {name!r} is not registered under {home.root}"
    if not names:
        return (
            f"{where}, and no corpus is yet: `memory-os demo` builds the demo, "
            "`memory-os corpus add NAME FILE` registers your own"
        )
    suggestion = closest_names(name, names)
    hint = f" Did you mean {' or '.join(repr(s) for s in suggestion)}?" if suggestion else ""
    shown = ", ".join(names[:NAMES_LISTED])
    more = (
        f" and {len(names) - NAMES_LISTED} more (`memory-os corpus list`)"
        if len(names) > NAMES_LISTED
        else ""
    )
    return f"{where}.{hint} Registered: {shown}{more}."


def unknown_corpus(
    home: MemoryHome, name: str, registered: Sequence[str] | None = None
) -> CorpusNotFoundError:
    return CorpusNotFoundError(unknown_corpus_message(home, name, registered))
