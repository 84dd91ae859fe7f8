"""Settings section ``router:`` (thresholds and lifetimes of the Engineer Cafe router and its sessions).

The fields marked :class:`~core.options.Option` are the per-query options of ``magi route``,
``POST /router/route|ask`` and :func:`router.api.route`, derived from :data:`ROUTER_OPTIONS`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from core.options import Option, Options
from core.settings import Section
from sessions.models import SessionPolicy


class RouterSettings(Section):
    name: ClassVar[str] = "router"

    confidence_threshold: Annotated[float, Option("threshold", metavar="X")] = Field(
        0.5, ge=0, le=1, description="Results below this confidence abstain (ClarificationAgent or GeneralKnowledge)."
    )
    max_query_chars: int = Field(500, ge=10, le=10_000, description="Longest query accepted (longer: 413/exit 2).")
    session_ttl_s: float = Field(
        86_400.0, gt=0, description="A session untouched this long is expired: it starts again empty."
    )
    previous_request_type_ttl_s: float = Field(
        1_800.0, gt=0, description="A follow-up inherits the previous request type only if it is younger than this."
    )
    history_limit: int = Field(200, ge=1, le=10_000, description="History entries kept per session (oldest dropped).")

    official_site: str = Field(
        "https://engineercafe.jp/", description="Where visitor answers send people for what the router cannot answer."
    )

    replicas: int = Field(1, ge=1, le=64, description="Serve replicas of the router app (zero CPUs each).")
    decision_log: bool = Field(
        False,
        description="Log one JSON line per routed question (agent, category, confidence; never the question) "
        "in the router's replicas. Off by default: the metrics count the same decisions, and writing a line "
        "per request took about a sixth of a replica's routing work in a profile under load.",
    )

    scripted_latency_s: float = Field(
        0.0, ge=0, le=60, description="Delay per call of the shipped scripted model (benchmarks; 0: none)."
    )

    def session_policy(self) -> SessionPolicy:
        """The lifetimes of the router's sessions."""
        return SessionPolicy(
            ttl_s=self.session_ttl_s,
            previous_ttl_s=self.previous_request_type_ttl_s,
            history_limit=self.history_limit,
        )


ROUTER_OPTIONS = Options(RouterSettings)


__all__ = ["ROUTER_OPTIONS", "RouterSettings"]
