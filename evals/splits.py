"""The tuning split of the development data: weights and thresholds are chosen on `tune` haystacks and confirmed
on `confirm` ones (the rest of both benchmarks is held out and measured independently).

A haystack's side is a hash of its id (LongMemEval question id, LoCoMo sample id), so the split is stable
whatever the file order and needs no list: on the dev files it puts 32 of 63 LongMemEval questions (4 of the 7
knowledge-update ones) and LoCoMo conv-26 on the tune side."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Literal, TypeVar

Split = Literal["tune", "confirm", "all"]
SPLITS: tuple[Split, ...] = ("tune", "confirm", "all")
_SALT = "memory-os:"

H = TypeVar("H")


def split_of(haystack_id: str) -> Literal["tune", "confirm"]:
    digest = hashlib.sha1((_SALT + haystack_id).encode("utf-8")).hexdigest()
    return "tune" if int(digest, 16) % 2 == 0 else "confirm"


def in_split(haystacks: Iterable[H], split: Split, key=lambda h: h.haystack_id) -> list[H]:
    """The haystacks on `split`'s side (all of them for `all`)."""
    return [h for h in haystacks if split == "all" or split_of(key(h)) == split]
