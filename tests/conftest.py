"""Shared fixtures: an isolated memory home and Dagster instance per test, and small input writers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evals.datasets import shared_data_dir
from memory_core.embeddings.hashing import HashingEmbedder
from memory_core.store.db import MemoryHome, dispose_engines

# ../shared/data beside the repository; MEMORY_OS_SHARED_DATA points elsewhere (e.g. from a git worktree)
SHARED_DATA = shared_data_dir()


@pytest.fixture
def home(tmp_path, monkeypatch) -> MemoryHome:
    root = tmp_path / "home"
    monkeypatch.setenv("MEMORY_OS_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    yield MemoryHome.resolve(root)
    dispose_engines()


@pytest.fixture
def instance(home):
    import dagster as dg

    from memory_assets.instance import local_storage

    temp_dir = os.environ["DAGSTER_HOME"]  # the product's storage (memory_assets/instance_storage.py)
    with dg.instance_for_test(temp_dir=temp_dir, overrides={"storage": local_storage(temp_dir)}) as inst:
        yield inst


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8") as fp:
        for row in rows:
            fp.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def needs_shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


@pytest.fixture
def chat_server():
    """A local OpenAI-compatible chat-completions server (see tests/chat_server.py)."""
    from tests.chat_server import ChatServer

    server = ChatServer().start()
    yield server
    server.stop()


def stage_resources(home: MemoryHome, **overrides) -> dict:
    """Every stage's default resources bound to `home` (Dagster needs resources for every asset passed to
    `materialize`, selected or not), with per-test overrides."""
    from memory_assets.runner import bound_resources

    return bound_resources(home, overrides)


@pytest.fixture(scope="session")
def built_demo(tmp_path_factory):
    """The shipped demo export built through every stage (offline teacher, hashing embeddings) once per
    test session, by the project's runner: (MemoryHome, corpus name). Tests must not write to it."""
    import dagster as dg

    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.demo import demo_export_path
    from memory_resources.embeddings import EmbeddingsResource

    root = tmp_path_factory.mktemp("built_demo")
    home = MemoryHome.resolve(root / "home")
    (root / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        hashing = EmbeddingsResource(provider="hashing", hashing_dim=256)
        runner = CorpusRunner(home, instance, resources={"embeddings": hashing})
        runner.register(plan_corpora("demo", demo_export_path()))
        run = runner.materialize("demo")
    assert run.success
    return home, "demo"


@pytest.fixture(scope="session")
def demo_health(built_demo):
    """The built demo's pipeline health (memory_assets.health), read from the instance its build ran on."""
    import dagster as dg

    from memory_assets.health import corpus_health

    home, name = built_demo
    with dg.instance_for_test(temp_dir=str(home.root.parent / "dagster")) as instance:
        yield corpus_health(instance, name)


@pytest.fixture
def postgres_url() -> str:
    """The test server of the `postgres` marker (MEMORY_OS_TEST_POSTGRES_URL); skips when unset or unreachable."""
    from sqlalchemy import create_engine, text

    from memory_core import settings

    url = settings.MEMORY_OS_TEST_POSTGRES_URL.get()
    if not url:
        pytest.skip(f"{settings.MEMORY_OS_TEST_POSTGRES_URL.name} not set")
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as err:  # no driver, no server, no role: skip, as without the variable
        pytest.skip(
            f"no Postgres server at {settings.MEMORY_OS_TEST_POSTGRES_URL.name}: {type(err).__name__}"
        )
    return url


@pytest.fixture
def pg_home(home, postgres_url, monkeypatch) -> MemoryHome:
    """`home` with its stores as databases of the test server, named `<unique prefix>_<corpus>_<store>`
    (set as MEMORY_OS_DATABASE_URL too); the databases are dropped afterwards."""
    import uuid

    from sqlalchemy import create_engine, make_url, text

    prefix = f"mos_{uuid.uuid4().hex[:10]}"
    server = make_url(postgres_url)
    template = server.set(database=f"{prefix}_DATABASE").render_as_string(hide_password=False)
    template = template.replace(f"{prefix}_DATABASE", f"{prefix}_{{corpus}}_{{store}}")
    monkeypatch.setenv("MEMORY_OS_DATABASE_URL", template)
    yield MemoryHome.resolve(home.root, template)
    dispose_engines()
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        names = conn.execute(
            text("SELECT datname FROM pg_database WHERE datname LIKE :p"), {"p": f"{prefix}%"}
        ).scalars()
        for name in list(names):
            _drop_database(conn, name)
    admin.dispose()


def _drop_database(conn, name: str) -> None:
    import warnings

    from memory_core.store.db import drop_database

    why = drop_database(conn, name)
    if why:
        warnings.warn(f"test database not dropped: {why}", stacklevel=2)


def pytest_collection_modifyitems(config, items):
    """`llm_server` tests are opt-in (a real model on the CPU): they run only when `-m` names the marker."""
    if "llm_server" in (config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="opt-in: run with -m llm_server (the llm-local extra)")
    for item in items:
        if "llm_server" in item.keywords:
            item.add_marker(skip)


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping every list of texts the model was asked for."""

    def __init__(self, dim: int):
        super().__init__(dim)
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return super().embed(texts)
