"""What every advisor tool shares: the context it runs in, the files it writes, its registry entry.

A tool is a pydantic input model, a pydantic output model and a function ``(input, context) ->
output``. The same entry serves the tool loop (Mode 2), ``magi tool`` and ``POST /advisor/tools/NAME``.
Files go to the artifact store under ``advisor/<session>/``, so they are listed and removed with
their session. A file is named for the person who downloads it, in Japanese with the day it was made
and no id (価格改定のお願い_2026-11-27.pdf); a second one of the same name in the session is
``…_2.pdf``, the name claimed in the store so two tools never write over each other.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.labels import Audience
from advisor.settings import AdvisorSettings
from core.llm.base import LLMClient
from core.settings import Settings
from core.storage import Artifacts, open_artifacts

FileType = Literal["graph", "excel", "word", "pdf"]
ARTIFACT_ROOT = "advisor"
MAX_STEM_CHARS = 40
# What a file name may not hold on the systems people save files to (and no path separator for the store).
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+|\s+')


def file_stem(title: str) -> str:
    """``title`` fit for a file name: no separators or characters a desktop refuses, no leading dot."""
    stem = _UNSAFE.sub("_", title).strip("_.")[:MAX_STEM_CHARS].strip("_.")
    return stem or "file"


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
        self, tool: str, title: str, suffix: str, data: bytes, kind: FileType, audience: Audience = "internal"
    ) -> GeneratedFile:
        """Store ``data`` as a new file of this session named ``<title>_<YYYY-MM-DD>.<suffix>`` (``_2`` ...
        when that name is taken: the store refuses a second writer of one name)."""
        base = f"{file_stem(title)}_{date.today().isoformat()}"
        for n in itertools.count(1):
            name = f"{base}.{suffix}" if n == 1 else f"{base}_{n}.{suffix}"
            key = artifact_prefix(self.session_id) + name
            written = self.artifacts.put_new(key, data)
            if written is not None:
                url = written
                break
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
    "MAX_STEM_CHARS",
    "AdvisorTool",
    "FileType",
    "GeneratedFile",
    "Runner",
    "ToolContext",
    "ToolInput",
    "artifact_prefix",
    "file_stem",
]
