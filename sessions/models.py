"""A conversation session: its history and the little state chat systems keep between messages.

The state is plain data (camelCase in JSON, stored whole as one row); the rules of its lifetime
live here too, so every system that shares sessions (the router, the advisor) applies them alike:

- a session untouched for ``SessionPolicy.ttl_s`` is **expired**: the next message starts it again
  empty (same id, same owner), as if it never existed;
- the **previous request type** is only reported while younger than ``previous_ttl_s`` (a follow-up
  an hour later is not a follow-up);
- the history keeps the newest ``history_limit`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.models import CamelModel

Role = Literal["user", "assistant", "system"]


class HistoryEntry(CamelModel):
    """One message of the conversation; frozen, so states can share entries safely."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    role: Role
    text: str
    language: str | None = None
    agent: str | None = None
    request_type: str | None = None
    timestamp: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class SessionPolicy:
    """Lifetimes and bounds of sessions (a system fills it from its own settings section)."""

    ttl_s: float = 86_400.0
    previous_ttl_s: float = 1_800.0
    history_limit: int = 200


class SessionState(CamelModel):
    session_id: str
    owner: str = Field(description="Fingerprint of the client that created the session ('' = local use).")
    client: str | None = Field(
        None,
        exclude=True,  # a column of its own (sessions/store.py), never in the state or an answer
        description="Whose share of sessions it counts against (deployments/identity.py: the key, or the address "
        "of a caller without one); None: the owner.",
    )
    created_at: datetime
    updated_at: datetime
    revision: int = 0
    history: list[HistoryEntry] = Field(default_factory=list)
    previous_request_type: str | None = None
    previous_request_type_at: datetime | None = None
    mode: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    generated_files: list[str] = Field(default_factory=list)
    history_from: int = Field(default=0, description="Store sequence number of the first history entry.")

    @classmethod
    def new(cls, session_id: str, owner: str, now: datetime, client: str | None = None) -> SessionState:
        return cls(session_id=session_id, owner=owner, client=client, created_at=now, updated_at=now)

    def expired(self, now: datetime, policy: SessionPolicy) -> bool:
        return now - self.updated_at > timedelta(seconds=policy.ttl_s)

    def previous_type(self, now: datetime, policy: SessionPolicy) -> str | None:
        """The previous request type while it is fresh enough to carry a follow-up, else None."""
        at = self.previous_request_type_at
        if self.previous_request_type is None or at is None:
            return None
        return self.previous_request_type if now - at <= timedelta(seconds=policy.previous_ttl_s) else None

    def remember_request_type(self, request_type: str, now: datetime) -> None:
        self.previous_request_type = request_type
        self.previous_request_type_at = now

    def add(self, entry: HistoryEntry, policy: SessionPolicy) -> None:
        self.history.append(entry)
        if len(self.history) > policy.history_limit:
            del self.history[: len(self.history) - policy.history_limit]

    def user_entries(self) -> list[HistoryEntry]:
        return [e for e in self.history if e.role == "user"]


__all__ = ["HistoryEntry", "Role", "SessionPolicy", "SessionState"]
