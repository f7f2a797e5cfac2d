"""The Concept Memory Loop (docs/architecture.md §4.4): mentions → retriever → router → ActionLog → canonical concepts.

One stage: it builds on the shared `memory_core.concepts` (the concept store, the ActionLog, the policy,
name normalisation) and no other stage imports it.

- `candidates`: a mention as the loop sees it; `retriever`: fused top-k over the in-memory concept index;
- `router`: create / attach / refine / reject rules, `adjudication`: the optional LLM for the ambiguous band;
- `patches`: the patches decisions become; `summaries`, `valid_time`: descriptions and fact times;
- `support`, `patterns`: subjects and content stems of facts, instances of goals, episodes of patterns;
- `memory`: the loop's working state; `apply`: decisions applied and written;
- `loop.consolidate`: the batch driver; `report`: the run's report and the figures after it;
  `checks`: the stage's contracts.
"""

from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.report import ConsolidationReport, LoopReport
from memory_core.memory_loop.retriever import ConceptIndex, RetrievalHit, RetrieverWeights
from memory_core.memory_loop.router import Decision, Router, RouterRules

__all__ = [
    "ConceptIndex",
    "ConsolidationReport",
    "Decision",
    "LoopConfig",
    "LoopReport",
    "RetrievalHit",
    "RetrieverWeights",
    "Router",
    "RouterRules",
    "consolidate",
]
