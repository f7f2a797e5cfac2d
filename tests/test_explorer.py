"""The explorer over HTTP (a real server on loopback, no browser): the token gate, every page on the built
demo, a search whose every citation opens its message with the span marked, unknown names answered with
the closest, stored markup shown as text, and nothing written to the memory home."""

from __future__ import annotations

import re
from html import unescape

import httpx2 as httpx  # the MCP SDK's HTTP client
import pytest

from memory_explorer import Explorer
from memory_explorer.auth import COOKIE
from memory_explorer.server import running
from memory_query import ReaderPool, browse
from tests.revision_samples import build, offline_runner, write_chat

DAGSTER_URL = "http://127.0.0.1:3999"


@pytest.fixture(scope="module")
def served(built_demo, demo_health):
    home, name = built_demo
    explorer = Explorer(
        home, dagster_url=DAGSTER_URL, agent_driver="offline", health=lambda corpus: demo_health
    )
    with running(explorer) as server:
        client = httpx.Client(base_url=server.base, timeout=120)
        assert client.get(f"/c/{name}?token={server.token}").status_code == 303
        yield server, client, home, name
        client.close()
    explorer.close()


def _links(html: str, css_class: str) -> list[str]:
    return [unescape(h) for h in re.findall(rf'<a class="{css_class}" href="([^"]+)"', html)]


def test_the_token_gate(served):
    server, _, _, name = served
    with httpx.Client(base_url=server.base) as stranger:
        for path in (f"/c/{name}", "/static/explorer.css", f"/c/{name}?token=wrong"):
            refused = stranger.get(path)
            assert refused.status_code == 403 and "carries the access token" in refused.text
        entry = stranger.get(f"/c/{name}/concepts?type=entity&token={server.token}")
        assert entry.status_code == 303 and entry.headers["location"] == f"/c/{name}/concepts?type=entity"
        cookie = entry.headers["set-cookie"]
        assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert stranger.get(entry.headers["location"]).status_code == 200  # the cookie lets it in from now on


def test_every_page_answers_with_what_memory_holds(served):
    _, client, home, name = served
    with ReaderPool(home) as pool:
        reader = pool.reader(name)
        summary = browse.corpus_summary(reader)
        conversation = browse.conversation_list(reader).rows[0]
        concept = browse.concept_list(reader, "DuckDB").rows[0]
        topic_map = browse.topic_map(reader)
    pages = {
        f"/c/{name}": [f"<b>{summary.messages}</b> messages", "Recent conversations"],
        f"/c/{name}/conversations": [conversation.title],
        f"/c/{name}/conversation/{conversation.conversation_id}": [conversation.title, 'class="msg r-user'],
        f"/c/{name}/concepts?type=entity": ["DuckDB", "entity ("],
        f"/c/{name}/concept/{concept.concept_id}": ["DuckDB", "Evidence", "Decisions", "memory_loop"],
        f"/c/{name}/profiles": ["the user"],
        f"/c/{name}/profile/user": ["schedule · running time", "mornings"],
        f"/c/{name}/topics": ['id="topic-map"', "Domains → anchors → topics"],
        f"/c/{name}/topic/{topic_map.topics[0].topic_id}": [
            topic_map.topics[0].label,
            "Segments nearest its centre",
        ],
        f"/c/{name}/health": ["Pipeline health", f"{DAGSTER_URL}/runs/"],
        f"/c/{name}/search": ["side by side"],
        "/": [f'href="/c/{name}"'],
    }
    for path, wanted in pages.items():
        response = client.get(path, follow_redirects=True)
        assert response.status_code == 200, path
        assert "default-src 'self'" in response.headers["content-security-policy"]
        for text in wanted:
            assert text in unescape(response.text), (path, text)
    the_map = client.get(f"/c/{name}/topics").text
    assert the_map.count('<a href="/c/') >= len(topic_map.topics) and the_map.count('class="lbl') == len(
        topic_map.topics
    )


def test_the_health_page_shows_every_stage_with_its_run(served, demo_health):
    _, client, _, name = served
    html = client.get(f"/c/{name}/health").text
    assert demo_health.built == len(demo_health.stages)  # the demo is built through every stage
    for stage in demo_health.stages:
        assert (
            f'/assets/{stage.asset}?view=partitions&amp;partition={name}"' in html
            and f"{DAGSTER_URL}/runs/{stage.run_id}" in html
        )
        assert stage.checks
        for check in stage.checks:  # each outcome as it came out: a failed WARN check is shown as a warning
            kind = "ok" if check.passed else ("err" if check.severity == "ERROR" else "warn")
            mark = "✓" if check.passed else "✗"
            assert f'class="check {kind}" title="{check.name} ({check.severity})">{mark}' in html
    figures = {k for s in demo_health.stages for k in s.figures}
    assert {"purity", "silhouette", "span_verified_rate"} <= figures


def test_a_search_cites_and_every_citation_opens_its_message(served):
    _, client, _, name = served
    html = client.get(
        f"/c/{name}/search", params={"q": "Which database does Kestrel use for analytics?"}
    ).text
    ask_side = html[html.index('id="ask"') : html.index('id="query"')]
    query_side = html[html.index('id="query"') :]
    assert "DuckDB" in ask_side and "DuckDB" in query_side
    cited = _links(ask_side, "cite")
    assert cited and all("/message/" in c for c in cited)
    for link in cited + _links(query_side, "cite")[:3]:
        opened = client.get(link, follow_redirects=True)
        message_id = re.search(r"/message/([^?]+)", link).group(1)
        assert opened.status_code == 200 and f'id="m-{message_id}" class="msg' in opened.text
        assert 'focused"' in opened.text or "focused abandoned" in opened.text
        if "span=" in link:  # the cited span is marked inside the focused message
            start, end = map(int, re.search(r"span=(\d+)-(\d+)", link).groups())
            mark = re.search(r'<mark class="focus">(.*?)</mark>', opened.text, re.S)
            assert mark is not None and len(unescape(mark.group(1))) == end - start


def test_unknown_names_are_answered_with_the_closest(served):
    _, client, _, name = served
    typo = client.get(f"/c/{name[:-1]}")
    assert typo.status_code == 404 and f'Did you mean <a href="/c/{name}">{name}</a>?' in typo.text
    for path in ("concept/nope", "topic/nope", "conversation/nope", "message/nope", "profile/nobody"):
        assert client.get(f"/c/{name}/{path}").status_code == 404


def test_browsing_writes_nothing(served):
    _, client, home, name = served
    store = home.corpus(name, readonly=True)
    before = ({n: store.version(n) for n in ("source", "staging", "reflective")}, _files(store.dir))
    for path in ("", "/concepts", "/topics", "/profiles", "/search?q=knee", "/health"):
        assert client.get(f"/c/{name}{path}").status_code == 200
    after = ({n: store.version(n) for n in ("source", "staging", "reflective")}, _files(store.dir))
    assert before == after


def _files(root) -> set[str]:
    """Files under `root`, leaving out SQLite's write-ahead log and shared-memory index (readers touch them)."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_stored_markup_is_shown_as_text(home, instance, tmp_path):
    rows = [
        (
            "c1",
            "u1",
            "user",
            "2024-02-01T10:00:00",
            'Look: <script>alert("x")</script> & <b>bold</b> [Source:u1]',
        ),
        ("c1", "a1", "assistant", "2024-02-01T10:00:05", "That is <img src=x onerror=alert(1)> markup."),
    ]
    assert build(offline_runner(home, instance), "marks", write_chat(tmp_path / "m.jsonl", rows), selection=["messages", "segments"]).success  # fmt: skip
    explorer = Explorer(home, agent_driver="offline", health=lambda corpus: None)
    with running(explorer) as server, httpx.Client(base_url=server.base, follow_redirects=True) as client:
        conv = client.get(f"/c/marks/conversations?token={server.token}").text
        link = re.search(r'href="(/c/marks/conversation/[^"]+)"', conv).group(1)
        html = client.get(link).text
    explorer.close()
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html


def test_the_health_page_lists_every_stage_of_the_code_location_in_build_order():
    import dagster as dg

    from memory_assets.definitions import defs
    from memory_assets.health import STAGE_ORDER

    graph = defs.resolve_asset_graph()
    materializable = {
        k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).is_materializable
    }
    assert set(STAGE_ORDER) == materializable and len(STAGE_ORDER) == len(materializable)
    for i, asset in enumerate(STAGE_ORDER):  # a stage comes after every stage it reads
        upstream = {k.to_user_string() for k in graph.get(dg.AssetKey(asset)).parent_keys}
        assert upstream & materializable <= set(STAGE_ORDER[:i]), asset
