"""`ParsedDoc`: one text's parse as plain data — what every reader of language works on.

A doc holds per token its character offset and length, lemma, coarse and fine part of speech, dependency
label, head, morphology and entity tag, plus the sentence, entity and noun-chunk spans. `Token` and `Span`
are light views over those arrays (a tree walk is a few list lookups), so a parse read back from the cache
behaves exactly as the one the model produced. Offsets are character offsets into `ParsedDoc.text`.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

FORMAT_VERSION = 1


@dataclass
class ParsedDoc:
    text: str
    starts: list[int]  # character offset of each token
    lengths: list[int]
    lemmas: list[str]
    pos: list[str]  # universal part of speech (PROPN, VERB, ...)
    tags: list[str]  # fine tag (VBD, NNP, ...)
    deps: list[str]  # dependency label (nsubj, dobj, ROOT, ...)
    heads: list[int]  # index of the head token (a root is its own head)
    morphs: list[str]  # "Tense=Past|VerbForm=Fin"
    sent_bounds: list[tuple[int, int]] = field(default_factory=list)  # token [start, end)
    ent_bounds: list[tuple[int, int, str]] = field(default_factory=list)  # token [start, end), label
    chunk_bounds: list[tuple[int, int]] = field(default_factory=list)  # noun chunks, token [start, end)

    def __len__(self) -> int:
        return len(self.starts)

    # ------------------------------------------------------------------------------------------ views
    @cached_property
    def tokens(self) -> list[Token]:
        return [Token(self, i) for i in range(len(self.starts))]

    @cached_property
    def children_of(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.starts]
        for i, h in enumerate(self.heads):
            if h != i:
                out[h].append(i)
        return out

    @cached_property
    def sent_of(self) -> list[int]:
        out = [0] * len(self.starts)
        for n, (a, b) in enumerate(self.sent_bounds):
            for i in range(a, b):
                out[i] = n
        return out

    @cached_property
    def ent_of(self) -> list[int]:
        """Per token, the index of the entity span holding it, -1 outside any."""
        out = [-1] * len(self.starts)
        for n, (a, b, _) in enumerate(self.ent_bounds):
            for i in range(a, b):
                out[i] = n
        return out

    @property
    def sents(self) -> list[Span]:
        return [Span(self, a, b) for a, b in self.sent_bounds]

    @property
    def ents(self) -> list[Span]:
        return [Span(self, a, b, label) for a, b, label in self.ent_bounds]

    @property
    def noun_chunks(self) -> list[Span]:
        return [Span(self, a, b) for a, b in self.chunk_bounds]

    def span(self, start: int, end: int, label: str = "") -> Span:
        return Span(self, start, end, label)

    def token_at(self, char: int) -> int:
        """Index of the token covering character `char` (the last token starting at or before it)."""
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= char:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # ------------------------------------------------------------------------------------ serialise
    def to_bytes(self) -> bytes:
        payload = {
            "v": FORMAT_VERSION,
            "s": self.starts,
            "n": self.lengths,
            "l": self.lemmas,
            "p": self.pos,
            "t": self.tags,
            "d": self.deps,
            "h": self.heads,
            "m": self.morphs,
            "S": self.sent_bounds,
            "E": self.ent_bounds,
            "C": self.chunk_bounds,
        }
        return zlib.compress(json.dumps(payload, separators=(",", ":")).encode("utf-8"), 6)

    @classmethod
    def from_bytes(cls, text: str, blob: bytes) -> ParsedDoc:
        d = json.loads(zlib.decompress(blob))
        if d.get("v") != FORMAT_VERSION:
            raise ValueError(f"parse format {d.get('v')} is not {FORMAT_VERSION}")
        return cls(
            text,
            d["s"],
            d["n"],
            d["l"],
            d["p"],
            d["t"],
            d["d"],
            d["h"],
            d["m"],
            [tuple(x) for x in d["S"]],
            [tuple(x) for x in d["E"]],
            [tuple(x) for x in d["C"]],
        )


class Token:
    """One token of a `ParsedDoc` (a view: two fields, everything else read from the doc's arrays)."""

    __slots__ = ("doc", "i")

    def __init__(self, doc: ParsedDoc, i: int):
        self.doc = doc
        self.i = i

    def __repr__(self) -> str:
        return f"Token({self.text!r}, {self.pos}, {self.dep}<-{self.doc.heads[self.i]})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Token) and other.doc is self.doc and other.i == self.i

    def __hash__(self) -> int:
        return hash((id(self.doc), self.i))

    @property
    def idx(self) -> int:
        return self.doc.starts[self.i]

    @property
    def end(self) -> int:
        return self.doc.starts[self.i] + self.doc.lengths[self.i]

    @property
    def text(self) -> str:
        return self.doc.text[self.idx : self.end]

    @property
    def lower(self) -> str:
        return self.text.lower().replace("’", "'")

    @property
    def lemma(self) -> str:
        return self.doc.lemmas[self.i]

    @property
    def pos(self) -> str:
        return self.doc.pos[self.i]

    @property
    def tag(self) -> str:
        return self.doc.tags[self.i]

    @property
    def dep(self) -> str:
        return self.doc.deps[self.i]

    @property
    def head(self) -> Token:
        return self.doc.tokens[self.doc.heads[self.i]]

    @property
    def is_root(self) -> bool:
        return self.doc.heads[self.i] == self.i

    @property
    def children(self) -> list[Token]:
        tokens = self.doc.tokens
        return [tokens[j] for j in self.doc.children_of[self.i]]

    @property
    def lefts(self) -> list[Token]:
        return [c for c in self.children if c.i < self.i]

    @property
    def rights(self) -> list[Token]:
        return [c for c in self.children if c.i > self.i]

    def morph(self, feature: str) -> str:
        """The value of one morphological feature ("Tense" → "Past"), "" when the token has none."""
        for part in self.doc.morphs[self.i].split("|"):
            key, _, value = part.partition("=")
            if key == feature:
                return value
        return ""

    @property
    def ent_type(self) -> str:
        n = self.doc.ent_of[self.i]
        return self.doc.ent_bounds[n][2] if n >= 0 else ""

    @property
    def sent(self) -> Span:
        a, b = self.doc.sent_bounds[self.doc.sent_of[self.i]]
        return Span(self.doc, a, b)

    def subtree(self) -> list[Token]:
        """This token and every token below it, in text order."""
        out, stack = [], [self.i]
        children = self.doc.children_of
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(children[j])
        tokens = self.doc.tokens
        return [tokens[j] for j in sorted(out)]

    def ancestors(self) -> Iterator[Token]:
        j, heads = self.i, self.doc.heads
        while heads[j] != j:
            j = heads[j]
            yield self.doc.tokens[j]


@dataclass(frozen=True)
class Span:
    """Tokens [start, end) of a doc, with a label for entities."""

    doc: ParsedDoc
    start: int
    end: int
    label: str = ""

    @property
    def tokens(self) -> list[Token]:
        return self.doc.tokens[self.start : self.end]

    @property
    def start_char(self) -> int:
        return self.doc.starts[self.start] if self.end > self.start else 0

    @property
    def end_char(self) -> int:
        last = self.end - 1
        return self.doc.starts[last] + self.doc.lengths[last] if self.end > self.start else 0

    @property
    def text(self) -> str:
        return self.doc.text[self.start_char : self.end_char]

    @property
    def root(self) -> Token:
        """The token of the span nearest the sentence root among those whose head lies outside it (as
        spaCy's `Span.root`)."""
        heads = self.doc.heads
        best, best_depth = self.start, None
        for j in range(self.start, self.end):
            h = heads[j]
            if h == j or not (self.start <= h < self.end):
                depth = sum(1 for _ in self.doc.tokens[j].ancestors())
                if best_depth is None or depth < best_depth:
                    best, best_depth = j, depth
        return self.doc.tokens[best]

    def __len__(self) -> int:
        return self.end - self.start
