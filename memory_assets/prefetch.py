"""What a run embeds ahead, on the core the concept loop leaves idle (memory_core/embeddings/prefetch.py).

The first stage after `segments` in the run starts it — `extraction` (the offline teacher is one core of
Python, an LLM teacher mostly waits), else `canonical_concepts` (the loop is the longest stage before `topics`
and `indexes`, and the local embedder runs one torch thread). It embeds the topics stage's segment chunks
(last first, meeting the stage in the middle), then the turns the messages family embeds from their own text
(computed on the thread), each only when the run also materialises that stage; the segment vectors (and
umap's import beside them) only when the topics stage has not clustered these very segments already
(`clustered_unchanged`: it will reuse its build and embed nothing). Not with one core (it would only
compete with the loop) and not without the embedding cache (it would throw its vectors away).

The model is loaded by the first vector that is not cached, not at the run's start: an unchanged corpus
re-materialised in a fresh process (the CLI) had paid ~8 s of CPU loading torch, the model and umap beside
Dagster's own work, for nothing to embed. Segments already clustered are not embedded ahead even when the
cache lacks their vectors (the embedding arithmetic changed since, `memory_core/embeddings/precision.py`).
"""

from __future__ import annotations

import itertools
import os

import dagster as dg

from memory_assets.common import run_materializes
from memory_core.embeddings.prefetch import EmbeddingPrefetch
from memory_core.store.db import CorpusStore
from memory_core.topics.prefetch import segment_vector_calls
from memory_core.topics.stage import clustered_unchanged
from memory_core.topics.tuner import TunerConfig, choose_reduction
from memory_core.topics.umap_loader import numba_cache_dir, start_loading_umap
from memory_core.vector_index.families import own_text_message_calls
from memory_core.vector_index.stage import message_vector_source
from memory_resources.embeddings import EmbeddingsResource


def _message_vectors(context: dg.AssetExecutionContext) -> str:
    """How the run's `indexes` step gets message vectors (its config, or the config's defaults)."""
    from memory_assets.read_side.assets import IndexesConfig

    ops = (context.run_config or {}).get("ops") or {}
    given = (ops.get("indexes") or {}).get("config") or {}
    defaults = IndexesConfig.model_fields
    return message_vector_source(
        given.get("families") or defaults["families"].default,
        given.get("message_vectors") or defaults["message_vectors"].default,
    )


def _reduces_with_umap(context: dg.AssetExecutionContext, segments: int) -> bool:
    """Whether the run's `topics` step will fit UMAP on `segments` segments (its config, or the defaults)."""
    ops = (context.run_config or {}).get("ops") or {}
    given = (ops.get("topics") or {}).get("config") or {}
    config = TunerConfig(
        reduction=given.get("reduction", TunerConfig.reduction),
        umap_min_points=given.get("umap_min_points", TunerConfig.umap_min_points),
    )
    try:
        return segments >= config.min_points and choose_reduction(segments, config) == "umap"
    except ValueError:  # an unknown reduction: the stage says so
        return False


def start_build_prefetch(
    context: dg.AssetExecutionContext, store: CorpusStore, embeddings: EmbeddingsResource
) -> EmbeddingPrefetch | None:
    """Start embedding what this run's later stages will ask for; None when there is nothing to do."""
    if (os.cpu_count() or 1) < 2 or not embeddings.use_cache:
        return None
    calls, what = [], []
    if run_materializes(context, "topics") and not clustered_unchanged(
        store, embeddings.embedder().model_name
    ):
        segment_calls = segment_vector_calls(store)
        if _reduces_with_umap(context, sum(map(len, segment_calls))):
            start_loading_umap(numba_cache_dir(store.home.cache_dir))
        calls.append(segment_calls)
        what.append("segment vectors")
    mode = _message_vectors(context)
    if run_materializes(context, "indexes") and mode in ("mixed", "segments"):
        calls.append(own_text_message_calls(store, own_text_when_shared=mode == "mixed"))
        what.append("own-text turn vectors")
    if not calls:
        return None
    embedder = embeddings.cached_embedder(store.home)
    prefetch = EmbeddingPrefetch(
        embedder, itertools.chain.from_iterable(calls), "build-vector-prefetch"
    ).start()
    context.log.info(
        f"{store.name}: {' and '.join(what)} are being embedded ahead of the stages that use them"
    )
    return prefetch
