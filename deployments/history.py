"""The history routes every app with past results shares: a page of the caller's own records, newest
first, and one record reopened whole (core/history.py). Another caller's record is "not found", the
same answer as one that never existed."""

from __future__ import annotations

import asyncio
import re

from fastapi.responses import JSONResponse

from core.errors import InputError, first_line
from core.history import History
from deployments.answers import error_answer

RECORD_ID = re.compile(r"[0-9a-f]{32}")


async def page_answer(history: History, owner: str, limit: int, cursor: str | None) -> JSONResponse:
    """200 with ``{items, nextCursor}``; 422 naming the query field for a bad limit or cursor."""
    try:
        page = await asyncio.to_thread(history.page, owner, limit=limit, cursor=cursor)
    except InputError as exc:
        field = "cursor" if first_line(exc).startswith("cursor") else "limit"
        return error_answer(422, f"invalid request: {first_line(exc)}", loc=("query", field))
    return JSONResponse(page.model_dump(mode="json", by_alias=True))


async def record_answer(history: History, owner: str, record_id: str, what: str) -> JSONResponse:
    """200 with ``{record, result}``: the list's entry and the whole answer as it was given; else 404."""
    found = await asyncio.to_thread(history.get, owner, record_id) if RECORD_ID.fullmatch(record_id) else None
    if found is None:
        return error_answer(404, f"no {what} {record_id[:40]!r} for this client; list yours first")
    record, result = found
    return JSONResponse({"record": record.model_dump(mode="json", by_alias=True), "result": result})


__all__ = ["RECORD_ID", "page_answer", "record_answer"]
