"""Settings section ``serve:``: what the HTTP apps accept from callers (body size, queue, folders)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

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
        description="Heavy requests (council, critic, router asks, advisor turns and tools, the llm app) one "
        "client may have running at once on a replica (429 above). A client is an API key; without keys, "
        "an address.",
    )
    client_queue: int = Field(
        3, ge=1, le=10_000, description="Research runs one client may have waiting at once (429 above)."
    )
    client_streams: int = Field(
        4, ge=1, le=10_000, description="Event streams one client may have open at once on a replica (429 above)."
    )
    client_address_header: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9-]{1,64}$",
        description="Behind a reverse proxy: the header it puts the caller's address in (X-Forwarded-For, "
        "X-Real-IP), read only on requests from serve.trusted_proxies; unset: the peer's address.",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses or networks (10.0.0.0/8) of the reverse proxies whose "
        "serve.client_address_header is believed.",
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

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                ipaddress.ip_network(value.strip(), strict=False)
            except ValueError:
                raise ValueError(f"{value!r} is not an address or a network (10.0.0.0/8, ::1)") from None
        return values


def corpus_roots(settings: Settings) -> list[Path]:
    """The folders requests may read, symlinks resolved (a root that is itself a link counts where it points)."""
    configured = ServeSettings.of(settings).corpus_roots or [data_path("corpus"), settings.data_dir / "corpora"]
    return [Path(os.path.realpath(root)) for root in configured]


__all__ = ["ServeSettings", "corpus_roots"]
