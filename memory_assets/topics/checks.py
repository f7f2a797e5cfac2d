"""Contracts and quality bounds of the topic layer (memory_core.topics.checks) as asset checks."""

import dagster as dg
from pydantic import Field

from memory_assets.common import corpus_check, corpus_store
from memory_assets.topics.assets import domains, topics, weighted_links
from memory_core.reports import CheckResult
from memory_core.topics import checks as contracts
from memory_resources.storage import MemoryStorage

_BOUNDS = contracts.TopicQualityBounds()


class TopicQualityBoundsConfig(dg.Config):
    """Quality bounds of a topic build (see memory_core.topics.checks.TopicQualityBounds)."""

    silhouette_min: float = Field(
        default=_BOUNDS.silhouette_min, description="silhouette of the clustered segments at least this"
    )
    silhouette_max: float = Field(default=_BOUNDS.silhouette_max)
    noise_ratio_min: float = Field(default=_BOUNDS.noise_ratio_min)
    noise_ratio_max: float = Field(
        default=_BOUNDS.noise_ratio_max, description="share of segments left as noise at most this"
    )

    def bounds(self) -> contracts.TopicQualityBounds:
        return contracts.TopicQualityBounds(
            silhouette_min=self.silhouette_min,
            silhouette_max=self.silhouette_max,
            noise_ratio_min=self.noise_ratio_min,
            noise_ratio_max=self.noise_ratio_max,
        )


@corpus_check(
    topics,
    # a quality target: it flags drift, it does not stop downstream stages
    severity=dg.AssetCheckSeverity.WARN,
    description="clustering silhouette within the configured bounds (no silhouette exists for the one-topic "
    "fallback of a small corpus: passes, saying so)",
)
def topic_silhouette_in_bounds(
    context: dg.AssetCheckExecutionContext, config: TopicQualityBoundsConfig, storage: MemoryStorage
) -> CheckResult:
    return contracts.topic_silhouette_in_bounds(corpus_store(context, storage), config.bounds())


@corpus_check(
    topics,
    severity=dg.AssetCheckSeverity.WARN,
    description="share of segments left as noise within the configured bounds",
)
def topic_noise_in_bounds(
    context: dg.AssetCheckExecutionContext, config: TopicQualityBoundsConfig, storage: MemoryStorage
) -> CheckResult:
    return contracts.topic_noise_in_bounds(corpus_store(context, storage), config.bounds())


@corpus_check(
    topics,
    blocking=True,
    description="every current segment is in topic_segments once; every non-noise one in an existing topic whose "
    "size counts it; no row for a retired or unknown segment",
)
def segments_in_one_topic(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.segments_in_one_topic(corpus_store(context, storage))


@corpus_check(
    weighted_links,
    blocking=True,
    description="every link weight in (min_weight, 100], at most top_k links per topic, both ends exist and the "
    "concept is live",
)
def link_weights_in_range(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.link_weights_in_range(corpus_store(context, storage))


@corpus_check(
    domains,
    blocking=True,
    description="every topic BELONGS_TO an anchor entity that BELONGS_TO the topic's domain; domain sizes match",
)
def topics_in_hierarchy(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.topics_in_hierarchy(corpus_store(context, storage))
