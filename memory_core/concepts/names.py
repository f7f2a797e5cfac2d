"""How every stage compares and collects the names of a concept (its title and aliases).

`normalise_name` is the plain comparison (case, punctuation, spaces). `name_keys` is canonicalisation for
telling whether two names name one thing: besides case and punctuation it ignores spaces and hyphens
("Pickle ball" = "pickleball"), a leading article and a trailing possessive ("the Kestrel's" = "Kestrel"),
maps spelling variants through an alias table ("Postgres" = "PostgreSQL", "k8s" = "Kubernetes") and
matches an acronym with the words it abbreviates ("NYC" = "New York City"). A corpus may extend the table
(`extra_aliases`: variant → canonical, both as written).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)

# spelling variants of one name → its canonical spelling (both joined: lower case, no spaces or punctuation)
NAME_ALIASES: dict[str, str] = {
    "postgres": "postgresql", "psql": "postgresql",
    "k8s": "kubernetes", "kube": "kubernetes",
    "js": "javascript", "ecmascript": "javascript", "ts": "typescript",
    "nodejs": "node", "golang": "go", "py": "python", "python3": "python",
    "reactjs": "react", "vuejs": "vue", "nextjs": "next", "mongo": "mongodb",
    "gh": "github", "gha": "githubactions", "vscode": "visualstudiocode", "vsc": "visualstudiocode",
    "aws": "amazonwebservices", "gcp": "googlecloudplatform", "googlecloud": "googlecloudplatform",
    "osx": "macos", "macosx": "macos",
    "chatgpt": "chatgpt", "gpt4": "gpt4", "openai": "openai",
    "nyc": "newyorkcity", "sf": "sanfrancisco", "uk": "unitedkingdom", "usa": "unitedstates",
}  # fmt: skip
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an) ")
_POSSESSIVE = re.compile(r" s$")  # "caroline s" is how normalise_name leaves "Caroline's"
_EXPANDS = "initials:"  # the initials of a name of several words ("New York City" → initials:nyc)
_ABBREVIATES = "acronym:"  # an acronym written as one word in capitals ("NYC" → acronym:nyc)


def normalise_name(text: str) -> str:
    """Lower case, punctuation to spaces, single spaces: how titles and aliases are compared."""
    return " ".join(_NON_WORD.sub(" ", text.casefold()).split())


def name_keys(name: str, extra_aliases: Mapping[str, str] | None = None) -> frozenset[str]:
    """The canonical keys of a name: two names sharing a key name one thing (see the module docstring)."""
    norm = _POSSESSIVE.sub("", _LEADING_ARTICLE.sub("", normalise_name(name)))
    if not norm:
        return frozenset()
    joined = norm.replace(" ", "")
    table = NAME_ALIASES if not extra_aliases else {**NAME_ALIASES, **_joined_table(extra_aliases)}
    keys = {table.get(joined, joined)}
    words = norm.split()
    if len(words) >= 2:
        keys.add(_EXPANDS + "".join(w[0] for w in words))
    elif name.strip().isupper() and 2 <= len(joined) <= 6:
        keys.add(_ABBREVIATES + joined)
    return frozenset(keys)


def matching_keys(keys: frozenset[str]) -> frozenset[str]:
    """The keys another name must have to name the same thing: the same spelling keys, and for an acronym
    the words it abbreviates (and back); two phrases with the same initials are not one name."""
    out = set()
    for key in keys:
        if key.startswith(_EXPANDS):
            out.add(_ABBREVIATES + key[len(_EXPANDS) :])
        elif key.startswith(_ABBREVIATES):
            out.add(_EXPANDS + key[len(_ABBREVIATES) :])
        else:
            out.add(key)
    return frozenset(out)


def same_name(a: str, b: str, extra_aliases: Mapping[str, str] | None = None) -> bool:
    return bool(matching_keys(name_keys(a, extra_aliases)) & name_keys(b, extra_aliases))


def _joined_table(aliases: Mapping[str, str]) -> dict[str, str]:
    return {
        normalise_name(k).replace(" ", ""): normalise_name(v).replace(" ", "") for k, v in aliases.items()
    }


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
