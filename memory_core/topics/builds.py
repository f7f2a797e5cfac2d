"""The `topic_builds` ledger: what each topic-layer build was made from and what it found.

A stage hashes its input and its configuration; when the latest build of the stage has the same two hashes
(and the tables still hold what it wrote), the stage reuses it instead of building again.
"""

from __future__ import annotations

from sqlalchemy import Connection, Table, func, insert, select

from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import topic_builds


def latest_build(conn: Connection, stage: str) -> dict | None:
    row = (
        conn.execute(
            select(topic_builds)
            .where(topic_builds.c.stage == stage)
            .order_by(topic_builds.c.build_id.desc())
            .limit(1)
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def reusable_build(conn: Connection, stage: str, input_sha256: str, config_sha256: str) -> dict | None:
    """The latest build of `stage` when it was made from this very input and configuration."""
    build = latest_build(conn, stage)
    if build and build["input_sha256"] == input_sha256 and build["config_sha256"] == config_sha256:
        return build
    return None


def record_build(
    conn: Connection,
    stage: str,
    input_sha256: str,
    config_sha256: str,
    config: dict,
    figures: dict,
    trials: list[dict],
    run_id: str,
) -> None:
    conn.execute(
        insert(topic_builds),
        [
            dict(
                stage=stage,
                input_sha256=input_sha256,
                config_sha256=config_sha256,
                config=config,
                figures=figures,
                trials=trials,
                run_id=run_id,
                recorded_at=utcnow(),
            )
        ],
    )


def find_reusable(
    store: CorpusStore, stage: str, input_sha256: str, config_sha256: str, table: Table, count_figure: str
) -> dict | None:
    """The reusable build of `stage`, provided `table` still holds as many rows as it recorded in
    `figures[count_figure]` (a store whose tables were wiped or edited since is rebuilt)."""
    with store.staging.connect() as conn:
        build = reusable_build(conn, stage, input_sha256, config_sha256)
        stored = conn.execute(select(func.count()).select_from(table)).scalar_one()
    return build if build and stored == build["figures"].get(count_figure) else None
