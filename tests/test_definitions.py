"""Layer 1: the code location loads, with every stage's assets, checks, jobs, sensors and schedules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest


def test_definitions_load_and_validate():
    from memory_assets.definitions import defs

    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {
        "messages",
        "segments",
        "mentions",
        "user_reactions",
        "canonical_concepts",
        "graph",
        "indexes",
        "topics",
        "weighted_links",
        "domains",
    } <= keys
    graph = defs.resolve_asset_graph()
    assert {graph.get(dg.AssetKey(k)).group_name for k in ("topics", "weighted_links", "domains")} == {
        "topics"
    }
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if not node.is_materializable:  # a dependency declared by key whose stage is not merged yet
            continue
        assert node.partitions_def is not None and node.partitions_def.name == "corpus", key
        assert "team:memory-os" in node.owners
    assert defs.resolve_job_def("build_corpus") is not None
    extraction = defs.resolve_assets_def("mentions")
    assert extraction.op.pool == "llm" and graph.get(dg.AssetKey("user_reactions")).group_name == "extraction"
    assert set(defs.resources) >= {"storage", "llm"}
    assert defs.resolve_sensor_def("inbox_sensor") is not None
    assert graph.get(dg.AssetKey("gardener_triage")).group_name == "gardener"
    assert graph.get(dg.AssetKey("gardener_actions")).group_name == "gardener"
    assert defs.resolve_job_def("gardener_triage_job") is not None
    assert defs.resolve_job_def("gardener_apply") is not None
    assert defs.resolve_schedule_def("gardener_nightly").job_name == "gardener_triage_job"


ROOT = Path(__file__).resolve().parents[1]
# the SDKs that cost seconds or hundreds of MB to import: only the code that uses them imports them
HEAVY_SDKS = (
    "torch",
    "sentence_transformers",
    "transformers",
    "openai",
    "umap",
    "hdbscan",
    "optuna",
    "matplotlib",
    "faiss",
)
PROJECT = ("memory_core", "memory_query", "memory_resources", "memory_assets", "memory_cli", "evals")

# Imports every module of the project in a fresh interpreter, with os.environ replaced by a mapping that
# records which project module reads it: first the domain and read-side packages (then the heavy SDKs loaded
# so far are reported), then the rest.
_IMPORT_EVERYTHING = """
import importlib, json, os, pkgutil, sys
from collections.abc import MutableMapping

class Recorder(MutableMapping):
    def __init__(self, real):
        self.real, self.reads = real, []
    def _note(self, key):
        frame = sys._getframe(2)
        while frame and frame.f_globals.get("__name__") in ("collections.abc", "_collections_abc", "os", "__main__"):
            frame = frame.f_back
        module = frame.f_globals.get("__name__", "") if frame else ""
        if module.split(".")[0] in PROJECT:
            self.reads.append([module, key])
    def __getitem__(self, key):
        self._note(key)
        return self.real[key]
    def __contains__(self, key):
        self._note(key)
        return key in self.real
    def __setitem__(self, key, value): self.real[key] = value
    def __delitem__(self, key): del self.real[key]
    def __iter__(self): return iter(self.real)
    def __len__(self): return len(self.real)

os.environ = Recorder(os.environ)

def import_all(package):
    module = importlib.import_module(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)

for package in ("memory_core", "memory_query"):
    import_all(package)
domain_loaded = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY + ("dagster",))
for package in PROJECT:
    import_all(package)
print(json.dumps({"domain_loaded": domain_loaded, "env_reads": os.environ.reads}))
"""


@pytest.fixture(scope="module")
def imported_everything() -> dict:
    code = f"PROJECT = {PROJECT!r}\nHEAVY = {HEAVY_SDKS!r}\n" + _IMPORT_EVERYTHING
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_domain_and_read_side_import_no_heavy_sdk_or_dagster(imported_everything):
    """Every module of memory_core and memory_query, found by walking the packages (no hand list)."""
    assert imported_everything["domain_loaded"] == []


def test_no_module_reads_the_environment_at_import(imported_everything):
    """Settings are read when they are used (memory_core.settings), never when a module is imported."""
    assert imported_everything["env_reads"] == []


def test_import_contract_no_dagster_in_domain():
    """The import-linter contract (pyproject `[tool.importlinter]`; `make lint` checks every contract)."""
    code = (
        "from importlinter.cli import lint_imports; raise SystemExit(lint_imports("
        "limit_to_contracts=('no-dagster-in-domain',), no_cache=True, no_logo=True))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Domain logic and the read side import no Dagster KEPT" in done.stdout
