"""Assets `claims`, `fact_states` and `repairs`: what memory believes is current, and how it revises itself.

`claims` first re-grounds what was built on changed sources (invalidation: evidence rejected / stale,
concepts capped and queued for repair), then writes every fact-bearing mention's claims; `fact_states`
keeps the bi-temporal history per (subject, slot key) (an LLM adjudicates what the rules cannot settle when
one is configured); `repairs` works the queue with a bounded action space."""

import dagster as dg
from pydantic import Field

from memory_assets.common import Table, check_specs, corpus_store, evaluate_contracts, materialize_result
from memory_assets.partitions import corpus_partitions
from memory_assets.revision import checks
from memory_core.concepts.policy import ConceptPolicy
from memory_core.revision.adjudication import LLMFactAdjudicator
from memory_core.revision.claims import build_claims
from memory_core.revision.fact_states import FactConfig, build_fact_states
from memory_core.revision.invalidation import invalidate_sources
from memory_core.revision.repair import RepairConfig, run_repairs
from memory_core.revision.report import SourceRevisionReport
from memory_core.store.db import utcnow
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage

_FACTS = FactConfig()


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="revision",
    deps=["canonical_concepts"],
    kinds={"sqlite"},
    check_specs=check_specs("claims", checks.CLAIMS),
    description="Re-ground evidence of changed or removed source messages (stale / rejected, concepts capped by "
    "their surviving evidence and queued for repair), then every fact-bearing mention's claims: subject, slot, "
    "value, valid time, status.",
)
def claims(context: dg.AssetExecutionContext, storage: MemoryStorage) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    now = utcnow()
    with store.write_lock():
        invalidation = invalidate_sources(store, ConceptPolicy(), context.run_id, now)
        report = SourceRevisionReport(build_claims(store, now), invalidation)
    context.log.info(f"{store.name}: {report.summary()}")
    return materialize_result(
        report,
        store=store,
        asset_key="claims",
        checks=evaluate_contracts(context, "claims", checks.CLAIMS, store=store),
    )


class FactStatesConfig(dg.Config):
    conflict_window_hours: float = Field(
        default=_FACTS.conflict_window_hours,
        description="two values of one subject's slot said closer than this, neither saying it changed, conflict",
    )
    llm_adjudicator: bool = Field(
        default=True,
        description="let the LLM decide supersede / conflict / unrelated for what the rules cannot settle, when one "
        "is configured (else: conflict)",
    )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="revision",
    deps=[claims],
    kinds={"sqlite"},
    pool="llm",
    check_specs=check_specs("fact_states", checks.FACT_STATES),
    description="Per (subject, slot key) the bi-temporal history of FactStates: a new value supersedes the open "
    "state, a claim ingested out of order lands in its place, same-time different values are disputed; versions "
    "kept in system time (believed_at).",
)
def fact_states(
    context: dg.AssetExecutionContext, config: FactStatesConfig, storage: MemoryStorage, llm: LLMResource
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    client = llm.build_client(storage.memory_home()) if config.llm_adjudicator else None
    adjudicator = LLMFactAdjudicator(client, store) if client is not None else None
    with store.write_lock():
        report = build_fact_states(
            store, FactConfig(conflict_window_hours=config.conflict_window_hours), adjudicator, context.run_id
        )
    context.log.info(
        f"{store.name}: {report.groups} histories, states {dict(report.states)}, "
        f"{report.supersessions} supersessions, {report.conflicts} disputed"
    )
    return materialize_result(
        report,
        store=store,
        asset_key="fact_states",
        checks=evaluate_contracts(context, "fact_states", checks.FACT_STATES, store=store),
    )


_REPAIR = RepairConfig()


class RepairsConfig(dg.Config):
    max_actions: int = Field(default=_REPAIR.max_actions, description="actions per run: a bounded worker")
    global_resynthesis: bool = Field(
        default=_REPAIR.global_resynthesis,
        description="also rebuild every live concept from its evidence, queued or not (an explicit escalation)",
    )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="revision",
    deps=[fact_states],
    kinds={"sqlite"},
    check_specs=check_specs("repairs", checks.REPAIRS),
    description="The repair worker over the repair queue only: reattach / refine / split / merge / archive "
    "(rebuild with global_resynthesis), each citing claims and spans, logged and reversible; reports what it "
    "could not repair.",
)
def repairs(
    context: dg.AssetExecutionContext, config: RepairsConfig, storage: MemoryStorage
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    with store.write_lock():
        report = run_repairs(
            store,
            RepairConfig(max_actions=config.max_actions, global_resynthesis=config.global_resynthesis),
            ConceptPolicy(),
            context.run_id,
        )
    context.log.info(
        f"{store.name}: {report.repaired} repaired {dict(report.actions)}, {len(report.escalated)} escalated, "
        f"{report.remaining} left queued"
    )
    return materialize_result(
        report,
        store=store,
        asset_key="repairs",
        tables={"unrepaired": Table()},
        checks=evaluate_contracts(context, "repairs", checks.REPAIRS, store=store),
    )
