"""How every stage compares and collects the names of a concept (its title and aliases)."""

from __future__ import annotations

import re

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def normalise_name(text: str) -> str:
    """Lower case, punctuation to spaces, single spaces: how titles and aliases are compared."""
    return " ".join(_NON_WORD.sub(" ", text.casefold()).split())


def merge_aliases(title: str, aliases: list[str], new: list[str]) -> list[str]:
    """Aliases plus `new` names, keeping first spellings, never repeating the title (compared normalised)."""
    seen = {normalise_name(title)} | {normalise_name(a) for a in aliases}
    out = list(aliases)
    for name in new:
        norm = normalise_name(name)
        if norm and norm not in seen:
            seen.add(norm)
            out.append(name.strip())
    return out
