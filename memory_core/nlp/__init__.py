"""The language capability: sentences, tokens, lemmas, parts of speech, dependencies and named entities of
a text, from a parser behind one abstract base (`base.LanguageParser`).

    parser = build_parser(NlpSpec(), cache_dir)     # CachedParser over the configured spaCy pipeline
    docs = parser.parse(texts)                       # list[ParsedDoc], one per text, in order

`ParsedDoc` (`doc.py`) is the typed result every reader works on: the offline teacher, the slot rules and
the question reader never see the provider's own objects, so a parse comes back from the cache exactly as
it left the model. The provider is imported lazily (spaCy loads in about a second); parses are cached by
(model, text) like embeddings (`cache.py`).
"""

from memory_core.nlp.base import LanguageParser, NlpSpec, NlpUnavailableError
from memory_core.nlp.cache import CachedParser, ParseCache
from memory_core.nlp.doc import ParsedDoc, Span, Token
from memory_core.nlp.factory import build_parser

__all__ = [
    "CachedParser",
    "LanguageParser",
    "NlpSpec",
    "NlpUnavailableError",
    "ParseCache",
    "ParsedDoc",
    "Span",
    "Token",
    "build_parser",
]
