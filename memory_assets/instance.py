"""The Dagster instance that in-process runs and the UI use, and the instance and workspace templates shipped
inside this package (found with importlib.resources, so an installed wheel has them too)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import dagster as dg
import yaml

from memory_core.settings import DAGSTER_HOME, DAGSTER_PG_URL, use_dagster_home
from memory_core.store.db import MemoryHome

INSTANCE_TEMPLATE = "dagster.yaml"  # telemetry off, one run per corpus partition, the `llm` pool
POSTGRES_STORAGE_TEMPLATE = "dagster.postgres.yaml"  # its storage stanza on Postgres (DAGSTER_PG_URL)
WORKSPACE_TEMPLATE = "workspace.yaml"  # the code location `memory_assets.definitions:defs`


def template(name: str):
    """A packaged template (a `Traversable`)."""
    return resources.files("memory_assets").joinpath("templates", name)


def instance_config_text(postgres: bool) -> str:
    """The packaged instance configuration; with `postgres`, its storage stanza (the first block, up to the
    first blank line after `storage:`) replaced by the Postgres one."""
    text = template(INSTANCE_TEMPLATE).read_text(encoding="utf-8")
    if not postgres:
        return text
    start = text.index("\nstorage:") + 1
    end = text.index("\n\n", start) + 1
    storage = template(POSTGRES_STORAGE_TEMPLATE).read_text(encoding="utf-8")
    return text[:start] + storage + text[end:]


def local_storage(base_dir: str) -> dict:
    """The packaged instance's SQLite `storage:` stanza with its files under `base_dir`: a temporary instance
    (`dg.instance_for_test(overrides={"storage": ...})`, tests and benchmarks) stores runs as the product does."""
    storage = yaml.safe_load(instance_config_text(postgres=False))["storage"]
    (entry,) = storage.values()  # `sqlite: {base_dir}` or `custom: {module, class, config: {base_dir}}`
    entry.get("config", entry)["base_dir"] = base_dir
    return storage


def ensure_dagster_home(home: MemoryHome) -> Path:
    """DAGSTER_HOME, or `<memory home>/dagster` when it is unset (then exported for Dagster and the processes
    it starts), seeded with the packaged dagster.yaml when the folder has none — its Postgres variant when
    DAGSTER_PG_URL is set."""
    configured = DAGSTER_HOME.get()
    path = Path(configured).expanduser().resolve() if configured else home.root / "dagster"
    if not configured:
        use_dagster_home(path)
    path.mkdir(parents=True, exist_ok=True)
    config = path / INSTANCE_TEMPLATE
    if not config.exists():
        config.write_text(instance_config_text(postgres=bool(DAGSTER_PG_URL.get())), encoding="utf-8")
    return path


def memory_instance(home: MemoryHome) -> dg.DagsterInstance:
    """The persistent instance in DAGSTER_HOME (see `ensure_dagster_home`): the one the UI shows."""
    ensure_dagster_home(home)
    return dg.DagsterInstance.get()


@contextlib.contextmanager
def workspace_file() -> Iterator[Path]:
    """A filesystem path of the packaged workspace.yaml, for `dagster dev -w`."""
    with resources.as_file(template(WORKSPACE_TEMPLATE)) as path:
        yield path
