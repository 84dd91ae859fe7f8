"""The advisor's conversation: what it keeps in the shared ``SessionState`` and the changes a turn makes.

Generic fields carry it: ``mode``, ``history`` (user and assistant texts; tool results as ``system``
entries with the tool's name in ``agent``), ``generated_files`` (artifact keys) and ``attributes``:
``advisor`` (marks the session as the advisor's), ``pending`` (a mode change waiting for consent),
``files`` (metadata of each generated file), ``tool_results`` (recent outputs, for documents to
embed), ``negotiation`` (role-play rounds), ``summary`` (compressed history), ``user_attributes``.

Changes are small objects handed to the session gateway (``sessions/gateway.py``): the session's
host (a Serve replica, or the CLI's own process) applies them under the session's lock and writes the
state through the store. The router's ``router/conversation.py`` is the same idea for the router.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions.models import HistoryEntry, SessionPolicy, SessionState

MAX_TOOL_RESULTS = 12
SESSION_NAMESPACE = "advisor"  # sessions.ids.session_key: the advisor's sessions meet no other system's


def kept_results(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest ``MAX_TOOL_RESULTS`` results plus the latest of each tool (so ten role-play rounds
    never push the session's cost calculation out), in their order."""
    latest = {
        id(next(r for r in reversed(results) if r.get("tool") == name)) for name in {r.get("tool") for r in results}
    }
    recent = {id(r) for r in results[-MAX_TOOL_RESULTS:]}
    return [r for r in results if id(r) in latest or id(r) in recent]


@dataclass(frozen=True)
class Begin:
    """Open (or create) the session for a turn; returns a copy of its state."""

    user_attributes: dict[str, Any] | None = None

    def __call__(self, state: SessionState, now: datetime) -> SessionState:
        state.attributes["advisor"] = True
        if self.user_attributes:
            state.attributes["user_attributes"] = {
                **state.attributes.get("user_attributes", {}),
                **self.user_attributes,
            }
        return state.model_copy(deep=True)


@dataclass(frozen=True)
class Commit:
    """What a turn adds: entries, the mode, attribute changes, files, tool results; optionally a
    compression that replaces the entries up to ``compress_until`` by one summary entry."""

    entries: list[HistoryEntry]
    policy: SessionPolicy
    mode: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    files: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    negotiation: list[dict[str, Any]] = field(default_factory=list)
    summary: HistoryEntry | None = None
    compress_until: datetime | None = None

    def __call__(self, state: SessionState, now: datetime) -> SessionState:
        if self.summary is not None and self.compress_until is not None:
            cut = self.compress_until
            kept = [e for e in state.history if e.timestamp > cut]
            state.history = [self.summary, *kept]
            state.attributes["summary"] = self.summary.text
            state.attributes["compressions"] = int(state.attributes.get("compressions", 0)) + 1
        for entry in self.entries:
            state.add(entry, self.policy)
        if self.mode is not None:
            state.mode = self.mode
        for key, value in self.attributes.items():
            if value is None:
                state.attributes.pop(key, None)
            else:
                state.attributes[key] = value
        if self.files:
            state.attributes["files"] = [*state.attributes.get("files", []), *self.files]
            state.generated_files.extend(f["key"] for f in self.files)
        if self.tool_results:
            results = [*state.attributes.get("tool_results", []), *self.tool_results]
            state.attributes["tool_results"] = kept_results(results)
        if self.negotiation:
            state.attributes["negotiation"] = [*state.attributes.get("negotiation", []), *self.negotiation]
        return state.model_copy(deep=True)


__all__ = ["MAX_TOOL_RESULTS", "SESSION_NAMESPACE", "Begin", "Commit", "kept_results"]
