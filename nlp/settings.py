"""Settings section ``nlp:``: the pool of long-lived NLP workers."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from core.settings import Section


class NlpSettings(Section):
    name: ClassVar[str] = "nlp"

    workers: int | None = Field(None, ge=1, description="NLP pool size (default: the cluster's CPUs).")


__all__ = ["NlpSettings"]
