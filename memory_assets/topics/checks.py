"""Contracts and quality bounds of the topic layer (memory_core.topics.checks), evaluated as asset checks in
the step of the asset they check."""

import dagster as dg
from pydantic import Field

from memory_assets.common import Contract
from memory_core.topics import checks as contracts

_BOUNDS = contracts.TopicQualityBounds()


class TopicQualityBoundsConfig(dg.Config):
    """Quality bounds of a topic build, for its two warning checks (see
    memory_core.topics.checks.TopicQualityBounds)."""

    silhouette_min: float = Field(
        default=_BOUNDS.silhouette_min, description="silhouette of the clustered segments at least this"
    )
    silhouette_max: float = Field(default=_BOUNDS.silhouette_max)
    noise_ratio_min: float = Field(default=_BOUNDS.noise_ratio_min)
    noise_ratio_max: float = Field(
        default=_BOUNDS.noise_ratio_max, description="share of segments left as noise at most this"
    )

    def bounds(self) -> contracts.TopicQualityBounds:
        return contracts.TopicQualityBounds(**self.model_dump())  # the same fields (test_config_mapping)


TOPICS = (
    Contract(
        "topic_silhouette_in_bounds",
        "clustering silhouette within the configured bounds (no silhouette exists for the one-topic fallback "
        "of a small corpus: passes, saying so)",
        contracts.topic_silhouette_in_bounds,
        # a quality target: it flags drift, it does not stop downstream stages
        severity=dg.AssetCheckSeverity.WARN,
        inputs=("store", "bounds"),
    ),
    Contract(
        "topic_noise_in_bounds",
        "share of segments left as noise within the configured bounds",
        contracts.topic_noise_in_bounds,
        severity=dg.AssetCheckSeverity.WARN,
        inputs=("store", "bounds"),
    ),
    Contract(
        "segments_in_one_topic",
        "every current segment is in topic_segments once; every non-noise one in an existing topic whose "
        "size counts it; no row for a retired or unknown segment",
        contracts.segments_in_one_topic,
        blocking=True,
    ),
)

WEIGHTED_LINKS = (
    Contract(
        "link_weights_in_range",
        "every link weight in (min_weight, 100], at most top_k links per topic, both ends exist and the "
        "concept is live",
        contracts.link_weights_in_range,
        blocking=True,
    ),
)

DOMAINS = (
    Contract(
        "topics_in_hierarchy",
        "every topic BELONGS_TO an anchor entity that BELONGS_TO the topic's domain; domain sizes match",
        contracts.topics_in_hierarchy,
        blocking=True,
    ),
)
