"""The MCP server through the official SDK client: in-process, over stdio (a `memory-os serve-mcp`
subprocess) and over streamable HTTP with a bearer token, on the built demo corpus."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx  # the MCP SDK's HTTP client
import pytest
from mcp import Client, StdioServerParameters

from memory_query.mcp_server import MemoryServer, build_server

ROOT = Path(__file__).resolve().parents[1]


def _data(result) -> dict | list:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data
    return json.loads(result.content[0].text)


async def _session(client: Client) -> dict:
    tools = {t.name for t in (await client.list_tools()).tools}
    answer = _data(
        await client.call_tool(
            "query_memory",
            {"corpus": "demo", "question": "Which database does Kestrel use for analytics?", "k": 5},
        )
    )
    first = answer["evidence"][0]
    source = _data(
        await client.call_tool("read_source_message", {"corpus": "demo", "message_id": first["message_id"]})
    )
    lensed = _data(
        await client.call_tool(
            "lens", {"corpus": "demo", "node_id": first["message_id"], "paths": ["Message>Concept"]}
        )
    )
    submitted = _data(
        await client.call_tool(
            "submit_evidence",
            {"corpus": "demo", "message_ids": [first["message_id"]], "claim": "analytics runs on DuckDB"},
        )
    )
    unknown = await client.call_tool("query_memory", {"corpus": "not-served", "question": "x"})
    checked = _data(
        await client.call_tool(
            "check_answer_citations",
            {"answer": f"Kestrel uses DuckDB {first['cite']}.", "citations": [first["cite"]]},
        )
    )
    return {
        "tools": tools,
        "answer": answer,
        "source": source,
        "lens": lensed,
        "submitted": submitted,
        "unknown": unknown,
        "checked": checked,
    }


def _check(out: dict) -> None:
    assert {
        "query_memory",
        "smart_search",
        "explore_node",
        "lens",
        "read_source_message",
        "submit_evidence",
    } <= out["tools"]
    evidence = out["answer"]["evidence"]
    assert any("DuckDB" in e["text"] for e in evidence[:3])
    assert all(e["cite"].startswith("[Source:") for e in evidence)
    assert "<direct_evidence>" in out["answer"]["context"]
    assert out["source"]["text"] and out["source"]["source_ref"]
    assert out["submitted"]["accepted"] and not out["submitted"]["rejected"]
    assert out["unknown"].is_error and "unknown corpus" in out["unknown"].content[0].text
    assert out["checked"]["valid"] is True


def test_in_process_client(built_demo):
    home, _ = built_demo
    server = build_server(MemoryServer(home, ["demo"]))

    async def run():
        async with Client(server) as client:
            return await _session(client)

    _check(asyncio.run(run()))


def test_stdio_subprocess(built_demo):
    home, _ = built_demo
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_cli.main", "--home", str(home.root), "serve-mcp", "--corpus", "demo"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
        cwd=str(ROOT),
    )

    async def run():
        async with Client(params, read_timeout_seconds=120) as client:
            return await _session(client)

    _check(asyncio.run(run()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_requires_the_bearer_token(built_demo):
    home, _ = built_demo
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "MEMORY_OS_MCP_TOKEN": "s3cret"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memory_cli.main",
            "--home",
            str(home.root),
            "serve-mcp",
            "--corpus",
            "demo",
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while True:
            try:
                denied = httpx.post(url, json={}, timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(
                        f"server did not start: {proc.stderr.read().decode() if proc.poll() is not None else 'timeout'}"
                    )
                time.sleep(0.3)
        assert denied.status_code == 401

        async def run():
            from mcp.client.streamable_http import streamable_http_client

            auth = httpx.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=120)
            async with Client(streamable_http_client(url, http_client=auth)) as client:
                return await _session(client)

        _check(asyncio.run(run()))
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_binding_beyond_loopback_needs_a_token(built_demo):
    home, _ = built_demo
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_cli.main",
            "--home",
            str(home.root),
            "serve-mcp",
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), "MEMORY_OS_MCP_TOKEN": ""},
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "needs a bearer token" in out.stderr


def test_the_server_registers_every_tool_of_the_registry_with_its_typed_result(built_demo):
    """One registry of tool names (memory_query/tool_registry.py): the server registers exactly its tools,
    each with the registry's description and its result model's schema as the output schema; the agent's
    Scout calls only registered agent tools."""
    from typing import get_args

    from memory_query.agent.driver import SCOUT_TOOLS
    from memory_query.agent.prompts import SCOUT_TOOL_CALLS, ScoutOut
    from memory_query.tool_registry import AGENT_TOOLS, TOOLS

    home, _ = built_demo

    async def listed():
        async with Client(build_server(MemoryServer(home, ["demo"]))) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = asyncio.run(listed())
    assert list(tools) == [t.name for t in TOOLS]
    for spec in TOOLS:
        assert tools[spec.name].description == spec.description
        if spec.result is not None:
            schema = tools[spec.name].output_schema
            assert set(spec.result.model_json_schema()["properties"]) <= set(schema["properties"]), spec.name
    agent = {t.name for t in AGENT_TOOLS}
    assert set(SCOUT_TOOLS) <= agent and {name for name, _ in SCOUT_TOOL_CALLS} <= agent
    assert set(get_args(ScoutOut.model_fields["tool"].annotation)) <= agent
