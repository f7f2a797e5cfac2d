"""The explorer in a real browser (Playwright driving Debian's chromium): every page of the built demo loads
with no console error and is saved as a screenshot, a search returns a cited answer whose citation opens
its message with the span marked, and the topic map draws its labels and answers hover, zoom and click.

Skipped when the `playwright` package or the browser is absent (`.ci/run` installs `chromium`; the
browser is /usr/bin/chromium, or MEMORY_OS_CHROMIUM). Screenshots go to build/screenshots (or
MEMORY_OS_SCREENSHOTS). With MEMORY_OS_EXPLORER_HOME and MEMORY_OS_EXPLORER_CORPUS set, the pages of that
built corpus are saved too (e.g. a LoCoMo conversation)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from memory_explorer import Explorer
from memory_explorer.server import running
from memory_query import ReaderPool, browse

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
CHROMIUM = Path(os.environ.get("MEMORY_OS_CHROMIUM", "/usr/bin/chromium"))
if not CHROMIUM.exists():
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
QUESTION = "Which database does Kestrel use for analytics?"


@pytest.fixture(scope="module")
def shots() -> Path:
    folder = Path(os.environ.get("MEMORY_OS_SCREENSHOTS") or ROOT / "build" / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield browser
        browser.close()


class Tab:
    """A browser page on a served explorer that records console errors and failed requests."""

    def __init__(self, browser, served):
        self.served = served
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)  # fmt: skip
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.goto(f"{served.base}/?token={served.token}")

    def open(self, path: str) -> float:
        """Load `path`; the seconds it took to load, with every error it raised asserted absent."""
        started = time.perf_counter()
        response = self.page.goto(self.served.base + path)
        self.page.wait_for_load_state("networkidle")
        took = time.perf_counter() - started
        assert response is not None and response.status == 200, (path, response and response.status)
        assert not self.errors, (path, self.errors)
        return took

    def save(self, folder: Path, name: str) -> Path:
        path = folder / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(scope="module")
def served(built_demo, demo_health):
    home, _ = built_demo
    explorer = Explorer(home, agent_driver="offline", health=lambda corpus: demo_health)
    with running(explorer) as server:
        yield server
    explorer.close()


def corpus_pages(home, corpus: str) -> dict[str, str]:
    """Every page of a corpus, named: the first conversation, concept, subject and topic stand for theirs."""
    with ReaderPool(home) as pool:
        reader = pool.reader(corpus)
        conversation = max(browse.conversation_list(reader, limit=20).rows, key=lambda r: r.message_count)
        concepts = browse.concept_list(reader, limit=1).rows
        subjects = browse.subject_list(reader).rows
        topics = browse.topic_map(reader).topics
    c = f"/c/{corpus}"
    pages = {
        "overview": c,
        "conversations": f"{c}/conversations",
        "conversation": f"{c}/conversation/{conversation.conversation_id}",
        "concepts": f"{c}/concepts",
        "profiles": f"{c}/profiles",
        "topics": f"{c}/topics",
        "health": f"{c}/health",
        "search": f"{c}/search",
    }
    if concepts:
        pages["concept"] = f"{c}/concept/{concepts[0].concept_id}"
    if subjects:
        pages["profile"] = f"{c}/profile/{subjects[0].subject}"
    if topics:
        pages["topic"] = f"{c}/topic/{topics[0].topic_id}"
    return pages


def test_every_page_loads_without_a_console_error(browser, served, built_demo, shots):
    home, name = built_demo
    tab = Tab(browser, served)
    for page_name, path in corpus_pages(home, name).items():
        tab.open(path)
        assert tab.page.locator("h1").first.is_visible(), page_name
        tab.save(shots, f"{name}-{page_name}")


def test_a_search_returns_a_cited_answer_and_a_citation_opens_its_message(browser, served, built_demo, shots):
    _, name = built_demo
    tab = Tab(browser, served)
    tab.open(f"/c/{name}/search")
    tab.page.fill(".big-ask input[name=q]", QUESTION)
    tab.page.click(".big-ask button")
    tab.page.wait_for_selector("#ask .answer a.cite")
    assert not tab.errors, tab.errors
    assert (
        "DuckDB" in tab.page.inner_text("#ask .answer")
        and tab.page.locator("#query ol.evidence li").count() > 0
    )
    tab.save(shots, f"{name}-search-answered")
    cite = tab.page.locator("#ask .answer a.cite").first
    message_id = re.search(r"\[Source:([^\]]+)\]", cite.get_attribute("title")).group(1)
    cite.click()
    tab.page.wait_for_url(re.compile(rf"/conversation/.+#m-{re.escape(message_id)}$"))
    focused = tab.page.locator(f"li.focused#m-{message_id}")
    assert focused.is_visible() and focused.locator("mark.focus").is_visible()
    assert focused.locator("mark.focus").inner_text().strip() in focused.locator(".text").inner_text()
    assert not tab.errors, tab.errors
    tab.save(shots, f"{name}-citation-opened")


def test_the_topic_map_draws_labels_and_answers_hover_zoom_and_click(browser, served, built_demo, shots):
    _, name = built_demo
    tab = Tab(browser, served)
    tab.open(f"/c/{name}/topics")
    labels = tab.page.locator("#topic-map text.lbl")
    visible = [labels.nth(i).text_content() for i in range(labels.count()) if labels.nth(i).is_visible()]
    assert visible and all(visible)
    topic = tab.page.locator("#topic-map a.topic").last  # drawn last: the largest, on top
    label = topic.get_attribute("data-label")
    topic.locator("circle").hover()
    tip = tab.page.locator("#map-tip")
    assert tip.is_visible() and label in tip.inner_text()
    box = tab.page.locator("#topic-map").bounding_box()
    tab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.page.mouse.wheel(0, -400)
    assert "scale(" in tab.page.locator("#topic-map .viewport").get_attribute("transform")
    tab.page.mouse.wheel(0, 400)
    topic.locator("circle").click()
    tab.page.wait_for_url(re.compile(r"/topic/"))
    assert tab.page.locator("h1").inner_text() == label and not tab.errors


@pytest.fixture(scope="module")
def moves(tmp_path_factory):
    """A user's facts changing over months (where they live, work, what they drive), built through the
    revision stages in a home of its own, served."""
    import dagster as dg

    from memory_core.store.db import MemoryHome
    from tests.revision_samples import MOVES, build, offline_runner, write_chat

    root = tmp_path_factory.mktemp("moves")
    home = MemoryHome.resolve(root / "home")
    (root / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        assert build(offline_runner(home, instance), "moves", write_chat(root / "moves.jsonl", MOVES)).success
    explorer = Explorer(home, agent_driver="offline", health=lambda corpus: None)
    with running(explorer) as server:
        yield server
    explorer.close()


def test_a_profile_shows_each_fact_with_its_history_and_evidence(browser, moves, shots):
    tab = Tab(browser, moves)
    tab.open("/c/moves/profiles")
    tab.page.click("text=the user")
    tab.page.wait_for_url(re.compile(r"/profile/user$"))
    residence = tab.page.locator("section.slot", has=tab.page.locator("h2", has_text="residence"))
    assert residence.locator(".now").inner_text().startswith("Seattle since 15 Jul 2024")
    states = residence.locator("ol.timeline li")
    assert (
        states.count() == 2
        and "Portland" in states.nth(1).inner_text()
        and "superseded" in states.nth(1).inner_text()
    )
    assert "replaced by Seattle" in states.nth(1).inner_text()
    assert not tab.errors, tab.errors
    tab.save(shots, "moves-profile")
    residence.locator(".now a.cite").first.click()  # the evidence of the current value opens its message
    tab.page.wait_for_url(re.compile(r"/conversation/.+#m-"))
    assert "I live in Seattle now" in tab.page.locator("li.focused .text").inner_text() and not tab.errors


def test_pages_of_another_built_corpus(browser, shots):
    """Opt-in: the pages of a corpus built elsewhere (MEMORY_OS_EXPLORER_HOME, MEMORY_OS_EXPLORER_CORPUS)."""
    root, corpus = os.environ.get("MEMORY_OS_EXPLORER_HOME"), os.environ.get("MEMORY_OS_EXPLORER_CORPUS")
    if not (root and corpus):
        pytest.skip("set MEMORY_OS_EXPLORER_HOME and MEMORY_OS_EXPLORER_CORPUS to screenshot another corpus")
    from memory_core.store.db import MemoryHome

    home = MemoryHome.resolve(root)
    explorer = Explorer(home, agent_driver="offline")
    with running(explorer) as server:
        tab = Tab(browser, server)
        pages = corpus_pages(home, corpus)
        question = os.environ.get("MEMORY_OS_EXPLORER_QUESTION")
        if question:
            pages["search-answered"] = f"/c/{corpus}/search?q={question}"
        for page_name, path in pages.items():
            tab.open(path)
            tab.save(shots, f"{corpus}-{page_name}")
    explorer.close()
