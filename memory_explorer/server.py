"""Serving the explorer: on loopback only, behind a fresh token printed in the URL, with uvicorn; and the same
server in a background thread for tests and benchmarks (`running`)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from memory_core.store.db import MemoryHome
from memory_explorer.app import DEFAULT_DAGSTER_URL, Explorer, create_app
from memory_explorer.auth import new_token
from memory_explorer.render import path

HOST = "127.0.0.1"
PORT = 8766  # beside the MCP server's 8765
PORTS_TRIED = 20


@dataclass(frozen=True)
class Served:
    url: str  # the page to open, token included
    base: str  # scheme, host and port
    token: str


def free_port(start: int = PORT, tries: int = PORTS_TRIED) -> int:
    """`start`, or the next port after it that nothing listens on (0: any free port)."""
    for port in [0] if start == 0 else range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise OSError(f"no free port in {start}-{start + tries - 1} on {HOST}: pass --port")


def _served(port: int, token: str, corpus: str | None) -> Served:
    base = f"http://{HOST}:{port}"
    start = path("c", corpus) if corpus else "/"
    return Served(f"{base}{start}?token={token}", base, token)


def serve(
    home: MemoryHome,
    corpus: str | None = None,
    port: int = PORT,
    dagster_url: str = DEFAULT_DAGSTER_URL,
    agent_driver: str = "auto",
    say=print,
) -> None:
    """Serve the explorer of `home` until interrupted, opening on `corpus` when given."""
    import uvicorn

    explorer = Explorer(home, dagster_url=dagster_url, agent_driver=agent_driver)
    chosen = free_port(port)
    served = _served(chosen, new_token(), corpus)
    names = explorer.corpora()
    explorer.warm([corpus] if corpus else names[:1])
    moved = f" ({port} was taken)" if chosen != port else ""
    counted = f"{len(names)} corpus" if len(names) == 1 else f"{len(names)} corpora"
    say(f"Memory explorer of {home.root} ({counted}), read-only, on this machine only{moved}:")
    say(f"    {served.url}")
    say("Ctrl+C stops it.")
    try:
        uvicorn.run(create_app(explorer, served.token), host=HOST, port=chosen, log_level="warning")
    finally:
        explorer.close()


@contextlib.contextmanager
def running(explorer: Explorer, token: str | None = None) -> Iterator[Served]:
    """The explorer served on a free loopback port in a background thread, for as long as the block runs."""
    import uvicorn

    token = token or new_token()
    port = free_port(0)
    config = uvicorn.Config(
        create_app(explorer, token), host=HOST, port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="explorer-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the explorer server did not start")
        time.sleep(0.02)
    try:
        yield _served(port, token, None)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
