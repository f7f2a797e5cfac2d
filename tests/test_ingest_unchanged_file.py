"""Layer 2: a file ingested before is not parsed again while it and the source store stand as that ingest left
them; its report is the one a real re-ingest gives. A changed file, a write to the source store or another
length limit is read in full."""

from __future__ import annotations

import json

from sqlalchemy import update

from memory_core.corpora import plan_corpora
from memory_core.ingest.stage import ingest_source
from memory_core.store import memo
from memory_core.store.schema import messages
from tests.conftest import write_json
from tests.samples import chatgpt_conversation

VARYING = {"seconds", "messages_per_second", "file_parsed"}


def _figures(report) -> dict:
    return {k: v for k, v in report.as_metadata().items() if k not in VARYING}


def _source(tmp_path, conversations):
    (source,) = plan_corpora("trips", write_json(tmp_path / "export.json", conversations))
    return source


def _broken_record() -> dict:
    bad = chatgpt_conversation("c3", "Broken")
    bad["mapping"]["u1"]["message"]["content"] = {"content_type": "text", "parts": "not a list"}
    return bad


def test_an_unchanged_file_is_not_parsed_again(home, tmp_path):
    store = home.corpus("trips")
    source = _source(tmp_path, [chatgpt_conversation("c1"), chatgpt_conversation("c2", "Second")])
    first = ingest_source(store, source, 4000)
    assert first.parsed and first.ingest.inserted > 0

    again = ingest_source(store, source, 4000)
    assert not again.parsed
    # the report a real re-ingest of the same file gives (the kept result forgotten, parsed in full)
    memo_file = store.dir / memo.MEMO_DIR / "ingest.json"
    memo_file.unlink()
    reparsed = ingest_source(store, source, 4000)
    assert reparsed.parsed and reparsed.ingest.inserted == 0
    assert _figures(again) == _figures(reparsed)
    assert again.ingest.unchanged == again.ingest.stored > 0


def test_dead_letters_are_reported_the_same_when_not_parsed(home, tmp_path):
    store = home.corpus("trips")
    source = _source(tmp_path, [chatgpt_conversation("c1"), _broken_record()])
    first = ingest_source(store, source, 4000)
    skipped = ingest_source(store, source, 4000)
    assert first.parsed and not skipped.parsed
    assert skipped.ingest.dead_letter_reasons == first.ingest.dead_letter_reasons
    assert skipped.ingest.records_in == skipped.ingest.records_counted == first.ingest.records_in


def test_a_change_of_file_store_or_limit_is_ingested(home, tmp_path):
    store = home.corpus("trips")
    source = _source(tmp_path, [chatgpt_conversation("c1")])
    ingest_source(store, source, 4000)
    assert not ingest_source(store, source, 4000).parsed

    # another length limit is another ingest
    assert ingest_source(store, source, 3000).parsed
    assert not ingest_source(store, source, 3000).parsed

    # a write to the source store beside the file: the next ingest reads the file again (and decides as
    # a full ingest does), the one after it does not
    kyoto = messages.c.text == "I want to visit Kyoto in April."
    with store.source.begin() as conn:
        conn.execute(update(messages).where(kyoto).values(text="I want to visit Osaka in April."))
    assert ingest_source(store, source, 3000).parsed
    assert not ingest_source(store, source, 3000).parsed

    # the file changed (a second conversation): parsed, the new one stored
    path = tmp_path / "export.json"
    path.write_text(json.dumps([chatgpt_conversation("c1"), chatgpt_conversation("c2", "Second")]))
    grown = ingest_source(store, source, 3000)
    assert grown.parsed and grown.ingest.conversations_new == 1
