"""The topics stage's segment pass, as calls an `EmbeddingPrefetch` can make ahead of the stage.

The segment pass is most of a build's embedding (~45 of ~105 s on a 500-turn LongMemEval haystack). The
prefetch takes the stage's own chunks (`chunked` with the stage's batch) from the last backwards; the stage
takes them from the first, finds the prefetched ones in the cache, and the two meet in the middle: at most the
chunks in flight at that moment are embedded by both. The vectors are the stage's but for float noise
(~1e-7) between threads, which the topic tuner can feel (evals/README.md).

A build starts it from `extraction`, the first stage after `segments` (or from `canonical_concepts` when the
run has no extraction): memory_assets/prefetch.py.
"""

from __future__ import annotations

from memory_core.embeddings.chunks import chunked
from memory_core.store.db import CorpusStore
from memory_core.topics.stage import TopicsConfig, load_segments


def segment_vector_calls(store: CorpusStore, batch: int = TopicsConfig.embed_batch) -> list[list[str]]:
    """The topics stage's embedding calls for the corpus's current segments, last first."""
    return chunked([s.text for s in load_segments(store)], batch)[::-1]
