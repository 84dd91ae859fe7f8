"""Settings section ``serve:``: what the HTTP apps accept from callers (body size, queue, folders)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from core.resources import data_path
from core.settings import AbsolutePath, Section, Settings


class ServeSettings(Section):
    name: ClassVar[str] = "serve"

    max_body_bytes: int = Field(
        64 * 1024, ge=1024, le=64 * 1024 * 1024, description="Largest request body accepted (413 above)."
    )
    queue_size: int = Field(
        10,
        ge=1,
        le=10_000,
        description="Runs waiting per replica (at most queue_size × max_replicas in all); a POST beyond "
        "gets 429 with Retry-After.",
    )
    retry_after_s: int = Field(30, ge=1, le=3600, description="Retry-After (seconds) sent with a 429.")
    corpus_roots: list[AbsolutePath] = Field(
        default_factory=list,
        description="Folders a request's 'corpus' may name (or lie under); empty: the bundled corpus and "
        "data_dir/corpora.",
    )
    client_in_flight: int = Field(
        4,
        ge=1,
        le=10_000,
        description="Heavy requests (council, critic, advisor turns and tools) one client may "
        "have running at once on a replica (429 above).",
    )
    max_runs: int = Field(3, ge=1, le=50, description="Most council runs ('runs') one HTTP request may ask for.")
    min_replicas: int = Field(1, ge=1, le=100, description="Serve autoscaling: fewest replicas of an app.")
    max_replicas: int = Field(1, ge=1, le=100, description="Serve autoscaling: most replicas of an app.")
    target_queued_runs: int = Field(
        5, ge=1, le=10_000, description="Serve autoscaling: runs waiting per replica it aims for."
    )
    run_lease_s: float = Field(
        30.0,
        ge=1.0,
        le=3600.0,
        description="Lease of a research replica on the run it runs, renewed every third of it; a run "
        "whose replica stopped renewing is taken over by another after this long.",
    )
    access_log: bool = Field(True, description="Log one line per HTTP request (method, path, status, time).")
    drain_s: float = Field(
        60.0,
        ge=1.0,
        le=3600.0,
        description="A replica being replaced (a rolling upgrade, a scale-down) takes no new request and waits "
        "up to this long for those in flight (streams included) before it stops.",
    )


def corpus_roots(settings: Settings) -> list[Path]:
    """The folders requests may read, symlinks resolved (a root that is itself a link counts where it points)."""
    configured = ServeSettings.of(settings).corpus_roots or [data_path("corpus"), settings.data_dir / "corpora"]
    return [Path(os.path.realpath(root)) for root in configured]


__all__ = ["ServeSettings", "corpus_roots"]
