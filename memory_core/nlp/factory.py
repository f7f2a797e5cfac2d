"""Builds the configured parser, wrapped in the memory home's parse cache."""

from __future__ import annotations

from pathlib import Path

from memory_core.nlp.base import LanguageParser, NlpSpec, NlpUnavailableError
from memory_core.nlp.cache import CachedParser, ParseCache


def build_parser(spec: NlpSpec | None = None, cache_dir: str | Path | None = None) -> LanguageParser:
    """The parser `spec` names (default: spaCy with the pinned English pipeline), cached under `cache_dir`
    when one is given."""
    spec = spec or NlpSpec()
    if spec.provider != "spacy":
        raise NlpUnavailableError(f"unknown language provider {spec.provider!r} (known: spacy)")
    from memory_core.nlp.spacy_parser import SpacyParser

    parser = SpacyParser(spec)
    return CachedParser(parser, ParseCache.for_dir(cache_dir) if cache_dir is not None else None)
