"""Memory OS domain logic: ontology, parsers, memory loop, clustering, gardener, temporal logic.

Nothing in this package imports Dagster: the orchestrator (`memory_assets`) and the read side
(`memory_query`) both call into it.
"""

__version__ = "0.1.0"
