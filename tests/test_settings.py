"""One settings module names every environment variable the project reads; the reference's table lists them; a
value is read when it is asked for."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from memory_core import settings
from memory_core.settings import NEO4J_USER, SETTINGS, OpenAIEndpoint

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memory_core", "memory_query", "memory_resources", "memory_assets", "memory_cli", "evals")


def _environment_uses(path: Path) -> list[int]:
    """Lines of `os.environ` / `os.getenv` / `from os import environ, getenv` in a module."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            if {a.name for a in node.names} & {"environ", "getenv", "putenv"}:
                lines.append(node.lineno)
    return lines


def test_only_the_settings_module_touches_the_environment():
    found = {
        str(path.relative_to(ROOT)): lines
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := _environment_uses(path))
    }
    assert found == {"memory_core/settings.py": found.get("memory_core/settings.py")}
    assert found["memory_core/settings.py"]  # the scan sees real uses


def test_the_reference_table_lists_every_setting():
    readme = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    section = readme.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", section, flags=re.M)
    assert sorted(listed) == sorted(s.name for s in SETTINGS)
    assert len(set(s.name for s in SETTINGS)) == len(SETTINGS)


def test_values_are_read_when_asked(monkeypatch):
    monkeypatch.setenv("NEO4J_USER", "alice")
    assert NEO4J_USER.get() == "alice"
    monkeypatch.setenv("NEO4J_USER", "")  # empty counts as unset
    assert NEO4J_USER.get() == "neo4j"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    endpoint = OpenAIEndpoint.from_environment()
    assert endpoint == OpenAIEndpoint(None, "http://127.0.0.1:9/v1", "gpt-4o-mini")
    monkeypatch.setenv("MEMORY_OS_HOME", "/tmp/somewhere")
    assert settings.memory_home_path() == Path("/tmp/somewhere")
    assert {s.name for s in SETTINGS if s.secret} == {
        "OPENAI_API_KEY",
        "NEO4J_PASSWORD",
        "MEMORY_OS_MCP_TOKEN",
        "DAGSTER_PG_URL",
    }
