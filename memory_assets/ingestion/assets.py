"""Assets `messages` and `segments`: thin wrappers over memory_core.ingest and memory_core.segments."""

import dagster as dg
from pydantic import Field

from memory_assets.common import Table, check_specs, corpus_store, evaluate_contracts, materialize_result
from memory_assets.ingestion import checks
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import registered_source
from memory_core.errors import CorpusNotFoundError
from memory_core.ingest.records import DEFAULT_MAX_MESSAGE_CHARS
from memory_core.ingest.stage import ingest_source
from memory_core.segments import DEFAULT_TOKEN_CAP, build_segments
from memory_resources.storage import MemoryStorage


class MessagesConfig(dg.Config):
    max_message_chars: int = Field(
        default=DEFAULT_MAX_MESSAGE_CHARS, description="longer messages are dead-lettered"
    )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="ingestion",
    kinds={"sqlite"},
    check_specs=check_specs("messages", checks.MESSAGES),
    description="Parse the corpus's input file into conversations and messages (source of truth); bad records are dead-lettered.",
)
def messages(
    context: dg.AssetExecutionContext, config: MessagesConfig, storage: MemoryStorage
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    source = _source(context, storage.memory_home(), store.name)
    with store.write_lock():
        report = ingest_source(store, source, config.max_message_chars)
    context.log.info(report.summary())
    return materialize_result(
        report,
        store=store,
        asset_key="messages",
        tables={"dead_letter_reasons": Table()},
        paths={"source_path"},
        checks=evaluate_contracts(context, "messages", checks.MESSAGES, store=store),
    )


def _source(context: dg.AssetExecutionContext, home, corpus: str):
    """The corpus's registered input; a run the inbox sensor requested registers it first. A partition that
    is no registered corpus (one added by hand in the UI) fails with one line saying what to do."""
    from memory_assets.ingestion.sensors import register_from_run_tags

    try:
        return registered_source(home, corpus)
    except CorpusNotFoundError as exc:
        if register_from_run_tags(home, corpus, context.run.tags):
            return registered_source(home, corpus)
        raise dg.Failure(
            description=f"{exc} (a partition added in the UI is not a corpus: register its file with "
            f"`memory-os corpus add {corpus} FILE`, or delete the partition)",
            allow_retries=False,
        ) from None


class SegmentsConfig(dg.Config):
    token_cap: int = Field(default=DEFAULT_TOKEN_CAP, description="max tokens (≈ chars/4) per segment")


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="ingestion",
    deps=[messages],
    kinds={"sqlite"},
    check_specs=check_specs("segments", checks.SEGMENTS),
    description="Cut conversations into rounds (user turn + replies) under a token cap, with message ids and offsets.",
)
def segments(
    context: dg.AssetExecutionContext, config: SegmentsConfig, storage: MemoryStorage
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    with store.write_lock():
        report = build_segments(store, token_cap=config.token_cap)
    return materialize_result(
        report,
        store=store,
        asset_key="segments",
        checks=evaluate_contracts(context, "segments", checks.SEGMENTS, store=store),
    )
