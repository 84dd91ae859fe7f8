"""Past results kept for the person who asked: one table per system, rows owned by a caller, newest first.

A system that keeps its results for later (the council's decisions, the critic's evaluations) registers
a table of the shape :data:`TABLE_SQL` under its own migration component and reads and writes it
through :class:`History`. Every row has an owner, the fingerprint of the API key the HTTP guard
accepted (or the local, keyless client: the CLI and a service without keys), and every read names the
owner: another owner's row is the same "not found" as a missing one.

Lists are pages, newest first, cut by an opaque cursor (the last row's time and id) rather than an
offset, so a row added while someone pages does not shift what they see next.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from pydantic import Field

from core.errors import InputError
from core.models import CamelModel
from core.store import Store

MAX_PAGE = 100
DEFAULT_PAGE = 20
TITLE_CHARS = 200
_TABLE_NAME = re.compile(r"[a-z][a-z_]{0,40}")

# The one shape of a history table; a system registers it under its own component and table name.
TABLE_SQL = """
    CREATE TABLE {table} (
        record_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        created_at TEXT NOT NULL,
        title TEXT NOT NULL,
        outcome TEXT NOT NULL,
        summary_json TEXT NOT NULL,
        result_json TEXT NOT NULL
    );
    CREATE INDEX {table}_owner ON {table}(owner, created_at, record_id)
"""


class Record(CamelModel):
    """One past result as a list shows it: what was asked, what came of it, when."""

    id: str
    created_at: str
    title: str = Field(description="What was asked (the question's first line, the ideas' titles).")
    outcome: str = Field(description="What came of it, as an identifier (APPROVE, SPLIT, selected ...).")
    summary: dict[str, Any] = Field(default_factory=dict, description="A few figures for the list.")


class RecordPage(CamelModel):
    """One page of a list, newest first; ``next_cursor`` fetches the next (None: this was the last)."""

    items: list[Record]
    next_cursor: str | None = None


def _cursor(created_at: str, record_id: str) -> str:
    return base64.urlsafe_b64encode(f"{created_at}\n{record_id}".encode()).decode().rstrip("=")


def _position(cursor: str) -> tuple[str, str]:
    """(created_at, record_id) of a cursor this module wrote; InputError for anything else."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, record_id = text.split("\n")
        datetime.fromisoformat(created_at)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        shown = cursor[:40]
        raise InputError(f"cursor {shown!r} is not one a list returned; omit it to start from the newest") from None
    return created_at, record_id


class History:
    """The owned rows of one history table (its name comes from the system's code, never from a caller)."""

    def __init__(self, store: Store, table: str) -> None:
        if not _TABLE_NAME.fullmatch(table):
            raise ValueError(f"history table name {table!r}: lower-case letters and '_' only")
        self.store = store
        self.table = table

    def add(self, owner: str, title: str, outcome: str, summary: dict[str, Any], result: dict[str, Any]) -> Record:
        """Keep ``result`` for ``owner``; returns the record (its id reopens it)."""
        record = Record(
            id=uuid.uuid4().hex,
            created_at=datetime.now(UTC).isoformat(timespec="microseconds"),
            title=" ".join(title.split())[:TITLE_CHARS],
            outcome=outcome,
            summary=summary,
        )
        row = {
            "record_id": record.id,
            "owner": owner,
            "created_at": record.created_at,
            "title": record.title,
            "outcome": outcome,
            "summary_json": json.dumps(summary, ensure_ascii=False),
            "result_json": json.dumps(result, ensure_ascii=False),
        }
        with self.store.transaction() as conn:
            conn.execute(
                sa.text(
                    f"INSERT INTO {self.table} (record_id, owner, created_at, title, outcome, summary_json, "
                    "result_json) VALUES (:record_id, :owner, :created_at, :title, :outcome, :summary_json, "
                    ":result_json)"
                ),
                row,
            )
        return record

    def page(self, owner: str, *, limit: int = DEFAULT_PAGE, cursor: str | None = None) -> RecordPage:
        """``owner``'s records, newest first, ``limit`` at a time, after ``cursor`` when given."""
        if not 1 <= limit <= MAX_PAGE:
            raise InputError(f"limit {limit}: give 1 to {MAX_PAGE}")
        params: dict[str, Any] = {"owner": owner, "limit": limit + 1}
        after = ""
        if cursor:
            params["at"], params["id"] = _position(cursor)
            after = " AND (created_at < :at OR (created_at = :at AND record_id < :id))"
        rows = self.store.query(
            f"SELECT record_id, created_at, title, outcome, summary_json FROM {self.table} "
            f"WHERE owner = :owner{after} ORDER BY created_at DESC, record_id DESC LIMIT :limit",
            params,
        )
        items = [
            Record(id=r[0], created_at=r[1], title=r[2], outcome=r[3], summary=json.loads(r[4])) for r in rows[:limit]
        ]
        more = len(rows) > limit
        return RecordPage(items=items, next_cursor=_cursor(items[-1].created_at, items[-1].id) if more else None)

    def get(self, owner: str, record_id: str) -> tuple[Record, dict[str, Any]] | None:
        """The record and its whole result, or None (missing, or another owner's: the same answer)."""
        rows = self.store.query(
            f"SELECT record_id, created_at, title, outcome, summary_json, result_json FROM {self.table} "
            "WHERE owner = :owner AND record_id = :id",
            {"owner": owner, "id": record_id},
        )
        if not rows:
            return None
        r = rows[0]
        return Record(id=r[0], created_at=r[1], title=r[2], outcome=r[3], summary=json.loads(r[4])), json.loads(r[5])


__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "TABLE_SQL", "History", "Record", "RecordPage"]
