"""Assets `mentions` and `user_reactions`: one pass of the teacher per segment fills both (≤ 1 LLM call per
segment), so they are one multi-asset in the `llm` concurrency pool."""

import dagster as dg
from pydantic import Field

from memory_assets.common import Table, check_specs, corpus_store, evaluate_contracts, materialize_result
from memory_assets.extraction import checks
from memory_assets.ingestion.assets import segments
from memory_assets.partitions import corpus_partitions
from memory_assets.prefetch import start_build_prefetch
from memory_core.extraction.quality import reaction_quality
from memory_core.extraction.report import UserReactionsReport
from memory_core.extraction.stage import extract_corpus
from memory_core.llm.cache import ResponseCache
from memory_core.progress import progress_to
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from memory_resources.nlp import NlpResource
from memory_resources.storage import MemoryStorage


class ExtractionConfig(dg.Config):
    parallel_calls: int = Field(
        default=4, description="concurrent LLM calls inside one run (offline: ignored)"
    )
    reaction_retention_days: float | None = Field(
        default=None,
        description="reactions expire this many days after they are recorded (None: kept until purged)",
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "mentions",
            deps=[segments],
            group_name="extraction",
            kinds={"sqlite"},
            description="Candidate concepts per segment (teacher → Semantic Mapper): verified verbatim spans, "
            "normalised titles, consolidated_id NULL until the memory loop links them.",
        ),
        dg.AssetSpec(
            "user_reactions",
            deps=[segments],
            group_name="extraction",
            kinds={"sqlite"},
            description="The people's reactions (12-state vocabulary) in the reflective store, with retention and purge.",
        ),
    ],
    check_specs=check_specs("mentions", checks.MENTIONS)
    + check_specs("user_reactions", checks.USER_REACTIONS),
    partitions_def=corpus_partitions,
    pool="llm",
    can_subset=False,
)
def extraction(
    context: dg.AssetExecutionContext,
    config: ExtractionConfig,
    storage: MemoryStorage,
    llm: LLMResource,
    embeddings: EmbeddingsResource,
    nlp: NlpResource,
):
    store = corpus_store(context, storage)
    start_build_prefetch(context, store, embeddings)  # later stages' vectors, beside the teacher
    home = storage.memory_home()
    teacher = llm.build_teacher(home, nlp.build_parser(home))
    context.log.info(f"extraction teacher: {teacher.describe()}")
    with store.write_lock(), progress_to(context.log.info):
        report = extract_corpus(
            store,
            teacher,
            parallel=config.parallel_calls,
            retention_days=config.reaction_retention_days,
            log=context.log.info,
            cache=ResponseCache.in_dir(storage.memory_home().cache_dir),
        )
    yield materialize_result(
        report,
        store=store,
        asset_key="mentions",
        tables={"rejected_reasons": Table(), "residual_reasons": Table()},
        checks=evaluate_contracts(context, "mentions", checks.MENTIONS, store=store),
    )
    reactions = UserReactionsReport(report, reaction_quality(store))
    yield materialize_result(
        reactions,
        store=store,
        asset_key="user_reactions",
        checks=evaluate_contracts(context, "user_reactions", checks.USER_REACTIONS, store=store),
    )
