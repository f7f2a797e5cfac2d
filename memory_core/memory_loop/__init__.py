"""The Concept Memory Loop (DESIGN §4.4): mentions → retriever → router → ActionLog → canonical concepts.

- `candidates`: a mention as the loop sees it; `retriever`: fused top-k over the in-memory concept index;
- `router`: create / attach / refine / reject rules, `adjudication`: the optional LLM for the ambiguous band;
- `concepts`: concept heads and the patches decisions become; `action_log`: append-only log and its replay;
- `loop.consolidate`: the batch driver; `metrics`: coverage, purity, grounding, compression, churn.
"""

from memory_core.memory_loop.loop import LoopConfig, LoopReport, consolidate
from memory_core.memory_loop.retriever import ConceptIndex, RetrievalHit, RetrieverWeights
from memory_core.memory_loop.router import Decision, Router, RouterRules

__all__ = [
    "ConceptIndex",
    "Decision",
    "LoopConfig",
    "LoopReport",
    "RetrievalHit",
    "RetrieverWeights",
    "Router",
    "RouterRules",
    "consolidate",
]
