"""The memory explorer: `memory-os explore [CORPUS]`, a local read-only web app over one memory home.

Server-rendered pages (Starlette and Jinja2 templates, a little plain JavaScript for the topic map) that read
the memory through `memory_query` only — `query_memory`, `ask`, the agent tools' typed results and the
browsing views (`memory_query.browse`) — and the pipeline's health from the Dagster instance
(`memory_assets.health`). It binds to loopback and requires the token of the URL it prints.
"""

from memory_explorer.app import Explorer, create_app

__all__ = ["Explorer", "create_app"]
