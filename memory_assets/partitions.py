"""One dynamic partition per corpus; `memory-os corpus add` and the drop-folder sensor add keys."""

import dagster as dg

corpus_partitions = dg.DynamicPartitionsDefinition(name="corpus")
