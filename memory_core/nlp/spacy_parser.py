"""The spaCy provider. spaCy and the pipeline are imported on first use (about a second), never at import."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from memory_core.nlp.base import INSTALL_HINT, LanguageParser, NlpSpec, NlpUnavailableError
from memory_core.nlp.doc import ParsedDoc

MAX_CHARS = 100_000  # a longer text is parsed in its first MAX_CHARS characters (pasted logs, dumps)


class SpacyParser(LanguageParser):
    def __init__(self, spec: NlpSpec | None = None):
        self.spec = spec or NlpSpec()
        self._nlp = None
        self._lock = threading.Lock()
        # known without loading spaCy: an unchanged corpus finds every parse in the cache and never loads it
        self.model_name = pipeline_identity(self.spec.pipeline_name)

    def load(self):
        with self._lock:
            if self._nlp is None:
                self._nlp = _load(self.spec.pipeline_name)
        return self._nlp

    def parse(self, texts: Sequence[str]) -> list[ParsedDoc]:
        nlp = self.load()
        clipped = [t[:MAX_CHARS] for t in texts]
        return [
            from_spacy(doc, full)
            for doc, full in zip(nlp.pipe(clipped, batch_size=self.spec.batch_size), texts, strict=True)
        ]


def pipeline_identity(name: str) -> str:
    """The identity "spacy-<spaCy version>/<pipeline>-<pipeline version>", read from the installed packages'
    metadata (or a pipeline folder's meta.json); "" parts when they are not installed (loading then says what to install)."""
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return ""

    folder = Path(name)
    if (folder / "meta.json").is_file():
        meta = json.loads((folder / "meta.json").read_text())
        pipeline = f"{meta.get('name', folder.name)}-{meta.get('version', '')}"
    else:
        pipeline = f"{name}-{version(name) or version(name.replace('_', '-'))}"
    return f"spacy-{version('spacy')}/{pipeline}"


def _load(name: str):
    try:
        import spacy
    except ImportError as exc:  # the base install has it; a trimmed environment may not
        raise NlpUnavailableError(
            f"spaCy is not installed: pip install 'spacy>=3.8,<3.9' and {INSTALL_HINT}"
        ) from exc
    try:
        return spacy.load(name, exclude=["senter"])
    except OSError as exc:
        raise NlpUnavailableError(
            f"the English pipeline {name!r} is not installed: {INSTALL_HINT}, or set MEMORY_OS_NLP_PIPELINE to an "
            "installed spaCy pipeline (en_core_web_sm, en_core_web_lg, ...)"
        ) from exc


def from_spacy(doc, text: str) -> ParsedDoc:
    """A spaCy `Doc` as a `ParsedDoc` over `text` (the full text when the doc parsed its first part)."""
    toks = list(doc)
    return ParsedDoc(
        text=text,
        starts=[t.idx for t in toks],
        lengths=[len(t.text) for t in toks],
        lemmas=[t.lemma_ for t in toks],
        pos=[t.pos_ for t in toks],
        tags=[t.tag_ for t in toks],
        deps=[t.dep_ for t in toks],
        heads=[t.head.i for t in toks],
        morphs=[str(t.morph) for t in toks],
        sent_bounds=[(s.start, s.end) for s in doc.sents],
        ent_bounds=[(e.start, e.end, e.label_) for e in doc.ents],
        chunk_bounds=[(c.start, c.end) for c in doc.noun_chunks],
    )
