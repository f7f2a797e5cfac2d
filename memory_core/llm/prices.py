"""Cost of a call from a price table (USD per million tokens, input and output). The table is configuration
(the LLM resource's `prices`); these defaults are list prices at the time of writing and may be stale."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
}


@dataclass(frozen=True)
class PriceTable:
    per_mtok: Mapping[str, tuple[float, float]]

    @classmethod
    def from_config(cls, table: Mapping[str, Sequence[float]] | None) -> PriceTable:
        merged = dict(DEFAULT_PRICES_PER_MTOK)
        for model, pair in (table or {}).items():
            if len(pair) != 2 or min(pair) < 0:
                raise ValueError(
                    f"price of {model!r} must be [input, output] USD per million tokens, got {pair!r}"
                )
            merged[model] = (float(pair[0]), float(pair[1]))
        return cls(merged)

    def price(self, model: str) -> tuple[float, float] | None:
        """Exact model name, else the longest configured prefix (dated snapshots: gpt-4o-mini-2024-07-18)."""
        if model in self.per_mtok:
            return self.per_mtok[model]
        prefixes = [m for m in self.per_mtok if model.startswith(m)]
        return self.per_mtok[max(prefixes, key=len)] if prefixes else None

    def cost(self, model: str, tokens_in: int, tokens_out: int) -> float:
        price = self.price(model)
        if price is None:
            return 0.0
        return round((tokens_in * price[0] + tokens_out * price[1]) / 1_000_000, 8)
