"""The explorer's web app: one route per page, each reading one corpus's memory through `memory_query` and
rendering a template. Nothing here writes to the memory home: stores are opened read-only, the agent's
trace is off, and the Dagster instance is only read."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from memory_core.corpus_names import closest_names
from memory_core.store.db import MemoryHome
from memory_explorer import render
from memory_explorer.auth import TokenGate
from memory_query import ReaderPool, browse, query_memory
from memory_query.tool_results import AskMemoryResult, QueryMemoryResult

HERE = Path(__file__).parent
DEFAULT_DAGSTER_URL = "http://127.0.0.1:3000"  # `memory-os ui`'s default port
SEARCH_K = 8
# every page's own scripts and styles only: stored text can never run as code
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; "
        b"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def corpus_page(handler):
    """A page of one corpus: the handler gets the reader of the corpus its URL names (a corpus the home does
    not have is answered with the 404 page that lists the registered ones)."""

    @functools.wraps(handler)
    def page(self, request: Request) -> Response:
        corpus = request.path_params["corpus"]
        if corpus not in self.corpora():
            return self.unknown_corpus(request, corpus)
        return handler(self, request, self.pool.reader(corpus))

    return page


class Explorer:
    """The pages of one memory home. `health` gives a corpus's pipeline health (default: read from the
    Dagster instance of the home); `agent_driver` is the kind `ask` uses (auto: the LLM driver when one is
    configured)."""

    def __init__(
        self,
        home: MemoryHome,
        *,
        dagster_url: str = DEFAULT_DAGSTER_URL,
        agent_driver: str = "auto",
        health: Callable[[str], object] | None = None,
    ):
        self.home = home
        self.pool = ReaderPool(home)
        self.dagster_url = dagster_url.rstrip("/")
        self.agent_driver_kind = agent_driver
        self._driver = None
        self._driver_lock = threading.Lock()
        self._health = health
        self._instance = None
        self._search_threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="explorer-search")
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters.update(render.filters())
        self.templates.env.globals.update(
            path=render.path,
            message_url=render.message_url,
            concept_url=render.concept_url,
            highlighted=render.highlighted,
            map_shapes=render.map_shapes,
        )

    # ------------------------------------------------------------------------------------ plumbing
    def corpora(self) -> list[str]:
        return [r["name"] for r in self.home.registrations()]

    def warm(self, corpora: list[str]) -> threading.Thread:
        """Load the corpora's memory, what their pages derive from all of it (the subjects, the topic map) and
        the Dagster modules in the background: the first pages answer warm."""

        def warm() -> None:
            for corpus in corpora:
                try:
                    reader = self.pool.reader(corpus)
                    reader.warm()
                    browse.warm(reader)
                except Exception:  # noqa: BLE001 — warming is an optimisation: a page reports real errors
                    continue
            _import_health()

        thread = threading.Thread(target=warm, name="explorer-warm", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self._search_threads.shutdown(wait=False, cancel_futures=True)
        self.pool.close()

    def page(self, request: Request, template: str, status: int = 200, **context) -> Response:
        context.setdefault("corpora", self.corpora())
        return self.templates.TemplateResponse(
            request, template, {"dagster_url": self.dagster_url, **context}, status_code=status
        )

    def not_found(self, request: Request, what: str, corpus: str | None = None, suggestions=()) -> Response:
        return self.page(
            request, "not_found.html", 404, corpus=corpus, what=what, suggestions=list(suggestions)
        )

    def unknown_corpus(self, request: Request, corpus: str) -> Response:
        """The 404 page of a corpus the home does not have: the corpora it has, the closest name first."""
        names = self.corpora()
        what = f"corpus {corpus!r} is not registered in {self.home.root}"
        return self.not_found(request, what, None, closest_names(corpus, names))

    @property
    def driver(self):
        with self._driver_lock:
            if self._driver is None:
                from memory_query.agent.choice import choose_driver

                self._driver = choose_driver(self.agent_driver_kind, self.home.cache_dir)
            return self._driver

    # ------------------------------------------------------------------------------------ pages
    def index(self, request: Request) -> Response:
        names = self.corpora()
        if len(names) == 1:
            return RedirectResponse(render.path("c", names[0]), 303)
        return self.page(request, "index.html", corpus=None)

    @corpus_page
    def overview(self, request: Request, reader) -> Response:
        summary = browse.corpus_summary(reader)
        recent = browse.conversation_list(reader, limit=8)
        concepts = browse.concept_list(reader, limit=12)
        return self.page(
            request, "overview.html", corpus=summary.corpus, summary=summary, recent=recent, concepts=concepts
        )

    @corpus_page
    def search(self, request: Request, reader) -> Response:
        corpus = reader.store.name
        question = request.query_params.get("q", "").strip()
        if not question:
            return self.page(request, "search.html", corpus=corpus, question="", asked=None, queried=None)
        asked = self._search_threads.submit(self._ask, corpus, question)
        queried = self._search_threads.submit(self._query, corpus, question)
        return self.page(
            request,
            "search.html",
            corpus=corpus,
            question=question,
            asked=asked.result(),
            queried=queried.result(),
        )

    def _ask(self, corpus: str, question: str) -> dict:
        from memory_query.api import ask

        started = time.perf_counter()
        try:
            answer = ask(question, corpus, driver=self.driver, pool=self.pool, trace=False)
        except Exception as exc:  # noqa: BLE001 — the page shows what failed beside the other half
            return {"error": f"{type(exc).__name__}: {exc}"}
        result = AskMemoryResult.of(answer)
        numbers = {e.cite: n for n, e in enumerate(result.evidence, 1)}
        spans = {e.message_id: e.span for e in result.evidence}
        html = render.cited(result.answer, corpus, numbers, spans)
        return {"result": result, "html": html, "numbers": numbers, "ms": _ms(started)}

    def _query(self, corpus: str, question: str) -> dict:
        from memory_query.answer import extractive_answer

        started = time.perf_counter()
        try:
            answer = query_memory(question, corpus, SEARCH_K, pool=self.pool)
        except Exception as exc:  # noqa: BLE001
            return {"error": f"{type(exc).__name__}: {exc}"}
        result = QueryMemoryResult.of(answer)
        numbers = {e.cite: n for n, e in enumerate(result.evidence, 1)}
        spans = {e.message_id: e.span for e in result.evidence}
        html = render.cited(extractive_answer(answer), corpus, numbers, spans)
        return {"result": result, "html": html, "numbers": numbers, "ms": _ms(started)}

    @corpus_page
    def conversations(self, request: Request, reader) -> Response:
        q = request.query_params.get("q", "")
        listing = browse.conversation_list(reader, q, _int(request, "offset"), 50)
        return self.page(request, "conversations.html", corpus=reader.store.name, listing=listing)

    @corpus_page
    def conversation(self, request: Request, reader) -> Response:
        focus = request.query_params.get("focus")
        start = request.query_params.get("start")
        view = browse.conversation_view(
            reader, request.path_params["cid"], focus, int(start) if start and start.isdigit() else None
        )
        if view is None:
            return self.not_found(request, "no such conversation in this memory", reader.store.name)
        span = render.parse_span(request.query_params.get("span"))
        return self.page(request, "conversation.html", corpus=reader.store.name, view=view, span=span)

    @corpus_page
    def message(self, request: Request, reader) -> Response:
        """A cited message: its conversation, opened around it, the span highlighted."""
        mid = request.path_params["mid"]
        found = browse.locate_message(reader, mid)
        if found is None:
            return self.not_found(request, f"no message {mid!r} in this memory", reader.store.name)
        url = render.path("c", reader.store.name, "conversation", found.conversation_id) + f"?focus={mid}"
        span = render.parse_span(request.query_params.get("span"))
        if span:
            url += f"&span={span[0]}-{span[1]}"
        return RedirectResponse(f"{url}#m-{mid}", 303)

    @corpus_page
    def concepts(self, request: Request, reader) -> Response:
        q, kind = request.query_params.get("q", ""), request.query_params.get("type", "")
        listing = browse.concept_list(reader, q, kind, _int(request, "offset"), 50)
        return self.page(request, "concepts.html", corpus=reader.store.name, listing=listing)

    @corpus_page
    def concept(self, request: Request, reader) -> Response:
        page = browse.concept_page(reader, request.path_params["cid"])
        if page is None:
            return self.not_found(request, "no such concept in this memory", reader.store.name)
        return self.page(request, "concept.html", corpus=reader.store.name, page=page)

    @corpus_page
    def profiles(self, request: Request, reader) -> Response:
        return self.page(
            request, "profiles.html", corpus=reader.store.name, subjects=browse.subject_list(reader)
        )

    @corpus_page
    def profile(self, request: Request, reader) -> Response:
        offset = _int(request, "offset")
        found = browse.profile(reader, request.path_params["subject"], request.query_params.get("slot"), offset)
        if found is None:
            return self.not_found(request, "memory holds no fact about this subject", reader.store.name)
        return self.page(request, "profile.html", corpus=reader.store.name, profile=found, profile_offset=offset)

    @corpus_page
    def topics(self, request: Request, reader) -> Response:
        return self.page(
            request,
            "topics.html",
            corpus=reader.store.name,
            topic_map=browse.topic_map(reader),
            tree=browse.topic_tree(reader),
        )

    @corpus_page
    def topic(self, request: Request, reader) -> Response:
        page = browse.topic_page(reader, request.path_params["tid"])
        if page is None:
            return self.not_found(request, "no such topic in this memory", reader.store.name)
        return self.page(request, "topic.html", corpus=reader.store.name, page=page)

    @corpus_page
    def health(self, request: Request, reader) -> Response:
        corpus = reader.store.name
        try:
            health = (self._health or self._instance_health)(corpus)
            error = None
        except Exception as exc:  # noqa: BLE001 — an unreadable instance is said on the page
            health, error = None, f"{type(exc).__name__}: {exc}"
        return self.page(request, "health.html", corpus=corpus, health=health, error=error)

    def _instance_health(self, corpus: str):
        from memory_assets.health import corpus_health, reading_instance

        with self._driver_lock:  # one instance for the process: opening one reads its storage's schema
            if self._instance is None:
                self._instance = reading_instance(self.home)
        return None if self._instance is None else corpus_health(self._instance, corpus)

    # ------------------------------------------------------------------------------------ the app
    def routes(self) -> list:
        c = "/c/{corpus}"
        return [
            Route("/", self.index),
            Route(c, self.overview),
            Route(f"{c}/search", self.search),
            Route(f"{c}/conversations", self.conversations),
            Route(c + "/conversation/{cid}", self.conversation),
            Route(c + "/message/{mid}", self.message),
            Route(f"{c}/concepts", self.concepts),
            Route(c + "/concept/{cid}", self.concept),
            Route(f"{c}/profiles", self.profiles),
            Route(c + "/profile/{subject:path}", self.profile),
            Route(f"{c}/topics", self.topics),
            Route(c + "/topic/{tid}", self.topic),
            Route(f"{c}/health", self.health),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ]


def create_app(explorer: Explorer, token: str | None):
    """The ASGI app: the explorer's routes behind the security headers and, with `token`, the token gate."""
    app = SecureHeaders(Starlette(routes=explorer.routes()))
    return TokenGate(app, token) if token else app


class SecureHeaders:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)


def _import_health() -> None:
    import memory_assets.health  # noqa: F401 — Dagster's import is the slow part of the first health page


def _int(request: Request, name: str) -> int:
    value = request.query_params.get(name, "0")
    return int(value) if value.isdigit() else 0


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
