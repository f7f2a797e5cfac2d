"""Reports of the extraction stage: what one pass of the teacher did (`mentions`) and what the reflective
store holds after it (`user_reactions`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from memory_core.extraction.quality import ReactionQuality
from memory_core.reports import Figures

# stats counters whose suffix is a rejection reason
_REJECTION_PREFIXES = ("rejected:", "spans_rejected:", "reactions_rejected:")


@dataclass
class ExtractionReport:
    teacher: dict = field(default_factory=dict)
    extractor: str = ""
    retention_days: float | None = None  # reactions expire this long after they are recorded (None: kept)
    conversations_total: int = 0
    conversations_processed: int = 0
    conversations_skipped: int = 0
    conversations_pending: int = 0
    segments_extracted: int = 0
    segments_reused: int = 0
    segments_failed: int = 0
    segments_pending: int = 0
    responses: int = 0
    responses_valid: int = 0
    mentions_written: int = 0
    reactions_written: int = 0
    reactions_expired: int = 0
    calls: int = 0
    cache_hits: int = 0
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    stats: Counter = field(default_factory=Counter)
    residual_reasons: Counter = field(default_factory=Counter)
    # how the teacher read (the offline teacher's parses: requested, cache hits, computed, tokens per second)
    reading: Figures = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def schema_validity(self) -> float:
        return round(self.responses_valid / self.responses, 4) if self.responses else 1.0

    @property
    def span_verified_rate(self) -> float:
        proposed = self.stats["spans_proposed"]
        return round(self.stats["spans_verified"] / proposed, 4) if proposed else 1.0

    @property
    def reaction_schema_validity(self) -> float:
        proposed = self.stats["reactions_proposed_raw"]
        return round(self.stats["reactions_schema_valid"] / proposed, 4) if proposed else 1.0

    def call_figures(self) -> Figures:
        """Who answered and what it cost (shown on both assets of the pass)."""
        return {
            "teacher": self.teacher.get("teacher", ""),
            "extractor": self.extractor,
            "llm_calls": self.calls,
            "llm_cache_hits": self.cache_hits,
            "llm_attempts": self.attempts,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
        }

    def rejection_reasons(self) -> list[dict]:
        """Rejected candidates, spans and reactions by reason, most frequent first."""
        rejected = {k.split(":", 1)[1]: v for k, v in self.stats.items() if k.startswith(_REJECTION_PREFIXES)}
        return [{"reason": k, "count": v} for k, v in sorted(rejected.items(), key=lambda kv: -kv[1])]

    def as_metadata(self) -> Figures:
        """The `mentions` asset's figures."""
        return {
            **self.call_figures(),
            "conversations_processed": self.conversations_processed,
            "conversations_skipped": self.conversations_skipped,
            "conversations_pending": self.conversations_pending,
            "segments_extracted": self.segments_extracted,
            "segments_reused": self.segments_reused,
            "segments_failed": self.segments_failed,
            "segments_pending": self.segments_pending,
            "candidates": self.stats["candidates"],
            "accepted": self.stats["accepted"],
            "rejected": self.stats["rejected"],
            "rejected_reasons": self.rejection_reasons(),
            "residual_reasons": [{"reason": k, "count": v} for k, v in self.residual_reasons.most_common()],
            "schema_validity_rate": self.schema_validity,
            "span_verified_rate": self.span_verified_rate,
            "spans_offset_fixed": self.stats["spans_offset_fixed"]
            + self.stats["spans_trimmed"]
            + self.stats["spans_normalised"],
            "mentions_written": self.mentions_written,
            # a person's feelings phrased as concepts stay out of the concept layer (extraction.reflective)
            "reflective_mentions_withheld": self.stats["reflective_mentions_withheld"],
            # one current extraction per segment: another teacher's mentions replaced (extraction.current)
            "mentions_superseded": self.stats["mentions_retired"],
            **self.reading,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class UserReactionsReport:
    """The `user_reactions` asset after an extraction pass: what it wrote and the quality of the store."""

    extraction: ExtractionReport
    quality: ReactionQuality

    def as_metadata(self) -> Figures:
        q, retention = self.quality, self.extraction.retention_days
        return {
            **self.extraction.call_figures(),
            "reactions_written": self.extraction.reactions_written,
            "reactions_total": q.reactions,
            "reactions_expired_purged": self.extraction.reactions_expired,
            "retention_days": retention if retention is not None else "unlimited",
            "schema_validity": q.schema_validity,
            "share_not_other": q.share_not_other,
            "null_timestamp_rate": q.null_timestamp_rate,
            # how many states, never which: Dagster's storage has no retention and no purge, so metadata
            # never names a person's states
            "states_seen": len(q.by_state),
            "reactions_on_purged_messages": self.extraction.stats["reactions_on_purged_messages"],
        }
