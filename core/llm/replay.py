"""Cassettes: record real LLM answers once, replay them in tests and demos without a network.

A cassette is a JSONL file with one ``{"key", "request", "response"}`` record per line (a ``.json``
file holding a list of such records is read too, for hand-written cassettes). The key is a hash
of the request's canonical JSON without ``timeout_s`` and ``role`` (a role only matters through
the model and parameters it resolves to), without ``model`` when that is unset or the configured
default ``llm.model``, and without ``tool_choice`` when unset: so plain-text requests keep the keys
they had before roles, typed parts and tool choices existed (a plain-string message is still
stored as a string). When a key repeats, the last record wins, so re-recording simply appends.
Streaming replays the recorded text as one delta.

Concurrent recorders (asyncio tasks, threads, Ray worker processes) each append one whole line
under an exclusive ``flock`` on the cassette, so records never interleave. POSIX only.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from core.errors import CassetteMissError, ConfigError
from core.llm.base import LLMClient, LLMRequest, LLMResponse
from core.llm.streaming import StreamEnd, StreamEvent, TextDelta, stream

HEAD_CHARS = 80


def request_key(request: LLMRequest, default_model: str | None = None) -> str:
    """Stable key of a request: sha256 of its sorted-keys JSON (see the module docstring for what is left out)."""
    data = request.model_dump(mode="json", exclude={"timeout_s", "role"})
    if data.get("model") in (None, default_model):
        data.pop("model", None)
    if data.get("tool_choice") is None:
        data.pop("tool_choice", None)  # added later: unset, it keeps the keys recorded before
    canonical = json.dumps(
        data,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def _head(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat[:HEAD_CHARS] + ("…" if len(flat) > HEAD_CHARS else ""))


def load_cassette(path: Path) -> dict[str, LLMResponse]:
    """Key -> response of every record in ``path`` (later records win)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read LLM cassette {path}: {exc.strerror}; check MAGI_LLM_CASSETTE "
            "or record one with MAGI_LLM_PROVIDER=record"
        ) from exc
    records: list[Any]
    try:
        if path.suffix == ".json":
            loaded = json.loads(raw) if raw.strip() else []
            records = loaded if isinstance(loaded, list) else [loaded]
        else:
            records = [json.loads(line) for line in raw.splitlines() if line.strip()]
        return {str(r["key"]): LLMResponse.model_validate(r["response"]) for r in records}
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"LLM cassette {path} is malformed ({exc}); re-record it with MAGI_LLM_PROVIDER=record"
        ) from exc


def append_record(path: Path, request: LLMRequest, response: LLMResponse, default_model: str | None = None) -> None:
    """Append one record as a single line, under an exclusive lock (safe across processes)."""
    if path.suffix == ".json":
        raise ConfigError(f"cannot record into {path}: recorded cassettes are JSONL; use a .jsonl path")
    record = {
        "key": request_key(request, default_model),
        "request": request.model_dump(mode="json"),
        "response": response.model_dump(mode="json"),
    }
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            fh.write(line)
            fh.flush()  # before unlocking, so the whole line is in the file
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class ReplayClient:
    """Answers from a cassette only; a request that was never recorded is a ``CassetteMissError``."""

    def __init__(self, cassette_path: str | Path, default_model: str | None = None) -> None:
        self.cassette_path = Path(cassette_path)
        self.default_model = default_model
        self._responses: dict[str, LLMResponse] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # reload in the new process
        return {"cassette_path": self.cassette_path, "default_model": self.default_model, "_responses": None}

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        response = await self.complete(request)
        if response.text:
            yield TextDelta(response.text)
        yield StreamEnd(response)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self._responses is None:
            self._responses = load_cassette(self.cassette_path)
        key = request_key(request, self.default_model)
        found = self._responses.get(key)
        if found is None:
            last_user = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
            raise CassetteMissError(
                f"no recorded LLM response for key {key} in cassette {self.cassette_path} "
                f"(system {_head(request.system)}, last user message {_head(last_user)}); "
                "the prompt changed or was never recorded: re-record with MAGI_LLM_PROVIDER=record "
                "and MAGI_LLM_CASSETTE pointing at this file"
            )
        return found.model_copy(deep=True)


class RecordingClient:
    """Calls ``inner`` and appends every request/response pair to the cassette."""

    def __init__(self, inner: LLMClient, cassette_path: str | Path, default_model: str | None = None) -> None:
        self.inner = inner
        self.default_model = default_model
        self.cassette_path = Path(cassette_path)
        if self.cassette_path.suffix == ".json":
            raise ConfigError(
                f"cannot record into {self.cassette_path}: recorded cassettes are JSONL; use a .jsonl path"
            )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        response = await self.inner.complete(request)
        append_record(self.cassette_path, request, response, self.default_model)
        return response

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Streams from ``inner`` and records the final response."""
        async for event in stream(self.inner, request):
            if isinstance(event, StreamEnd):
                append_record(self.cassette_path, request, event.response, self.default_model)
            yield event


__all__ = [
    "HEAD_CHARS",
    "RecordingClient",
    "ReplayClient",
    "append_record",
    "load_cassette",
    "request_key",
]
