"""What every advisor tool shares: the context it runs in, the files it writes, its registry entry.

A tool is a pydantic input model, a pydantic output model and a function ``(input, context) ->
output``. The same entry serves the tool loop (Mode 2), ``magi tool`` and ``POST /advisor/tools/NAME``.
Files go to the artifact store under ``advisor/<session>/``, so they are listed and removed with
their session.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.labels import Audience
from advisor.settings import AdvisorSettings
from core.llm.base import LLMClient
from core.settings import Settings
from core.storage import Artifacts, open_artifacts

FileType = Literal["graph", "excel", "word", "pdf"]
ARTIFACT_ROOT = "advisor"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ToolInput(BaseModel):
    """Base of tool inputs: unknown keys are errors, so a typo in a field name is reported."""

    model_config = ConfigDict(extra="forbid")


class GeneratedFile(BaseModel):
    """A file a tool wrote (the spec's ``session.generated_files`` entry)."""

    type: FileType
    key: str = Field(description="Artifact key, advisor/<session>/<name>.")
    name: str
    url: str = Field(description="Where the file is stored (file:// or the fsspec URL).")
    tool: str
    created_at: datetime
    audience: Audience = Field(
        "internal", description="internal: the owner's own analysis; external: fit to hand to the buyer."
    )


def artifact_prefix(session_id: str) -> str:
    return f"{ARTIFACT_ROOT}/{session_id}/"


@dataclass
class ToolContext:
    """Where a tool runs: settings, the session its files belong to, the LLM (simulate_negotiation),
    earlier tool results (documents embed charts and tables), negotiation rounds so far, the
    session's files (with their audience: a document for the buyer attaches external ones only)."""

    settings: Settings
    session_id: str = "standalone"
    llm: LLMClient | None = None
    earlier: list[dict[str, Any]] = field(default_factory=list)
    negotiation_rounds: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    _artifacts: Artifacts | None = None

    @property
    def section(self) -> AdvisorSettings:
        """The advisor's own settings (what most tools need of ``settings``)."""
        return AdvisorSettings.of(self.settings)

    @property
    def artifacts(self) -> Artifacts:
        if self._artifacts is None:
            self._artifacts = open_artifacts(self.settings)
        return self._artifacts

    def save(
        self, tool: str, stem: str, suffix: str, data: bytes, kind: FileType, audience: Audience = "internal"
    ) -> GeneratedFile:
        """Store ``data`` as a new file of this session; a short random part keeps names unique."""
        name = f"{_SAFE.sub('_', stem)[:40] or 'file'}_{uuid.uuid4().hex[:8]}.{suffix}"
        key = artifact_prefix(self.session_id) + name
        url = self.artifacts.put_bytes(key, data)
        saved = GeneratedFile(
            type=kind, key=key, name=name, url=url, tool=tool, created_at=datetime.now(UTC), audience=audience
        )
        self.files.append(saved.model_dump(mode="json"))
        return saved

    def file_audience(self, key: str) -> Audience | None:
        """The audience this session's file ``key`` was made for (None: not a file of this session)."""
        found = [f for f in self.files if f.get("key") == key]
        for record in self.earlier:
            found += [f for f in (record.get("output") or {}).get("files", []) if f.get("key") == key]
        if not found:
            return None
        return "external" if all(f.get("audience") == "external" for f in found) else "internal"

    def earlier_file(self, key: str) -> bytes | None:
        """Bytes of a file this session generated earlier (None when it is not this session's)."""
        if not key.startswith(artifact_prefix(self.session_id)):
            return None
        return self.artifacts.get_bytes(key) if self.artifacts.exists(key) else None


Runner = Callable[[Any, ToolContext], Awaitable[BaseModel]]


@dataclass(frozen=True)
class AdvisorTool:
    """One registry entry: name, what the model reads about it, input and output models, the function."""

    name: str
    description: str
    input_model: type[ToolInput]
    output_model: type[BaseModel]
    run: Runner


__all__ = [
    "ARTIFACT_ROOT",
    "AdvisorTool",
    "FileType",
    "GeneratedFile",
    "Runner",
    "ToolContext",
    "ToolInput",
    "artifact_prefix",
]
