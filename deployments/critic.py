"""Serve app ``critic`` (route prefix ``/critic``): evaluate business ideas over HTTP.

- ``POST /critic/evaluate`` ``{ideas: [BusinessIdea], weights?: "60:40", samples?, timeout?,
  industry?, noCache?, marketWeight?, synergyWeight? ...}`` (every HTTP option of the critic
  section) -> ``200`` CriticOutput (camelCase, as ``magi critic --format json``).
  Bad fields or options: 422 naming the field; no idea evaluable: 502 with each idea's error;
  no LLM configured: 503.
- ``GET /critic/healthz`` -> ``{"status": "ok"}`` (open without an API key).

Callers are checked first (deployments/security.py: API keys, body cap). The replica keeps one
WorkerPool of ``critic.max_workers`` worker actors, shared by the requests it serves, so at most
that many ideas are judged at once and no request pays for starting them again.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import logging
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from ray.serve import Application

from core.errors import ConfigError, LLMNotConfiguredError, MagiError, first_line
from core.settings import Settings
from critic.errors import CriticError
from critic.models import MAX_IDEAS, BusinessIdea, CriticInput
from critic.settings import CRITIC_OPTIONS, CriticSettings
from deployments.app_args import settings_from_args
from deployments.research import without_server_paths
from deployments.security import guard
from deployments.validation import answer_invalid_requests

log = logging.getLogger(__name__)
APP_NAME = "critic"
ROUTE_PREFIX = "/critic"

api = FastAPI(title="MAGI critic", description="Business ideas scored on market size and Mitsubishi Estate synergy.")
GUARD = guard(api)


class _CriticFields(BaseModel):
    """The body of ``POST /critic/evaluate``: the ideas, plus every critic option (``CRITIC_OPTIONS``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)  # "samples": "3" is no 3

    ideas: list[BusinessIdea] = Field(min_length=1, max_length=MAX_IDEAS)


class CriticRequest(CRITIC_OPTIONS.body(_CriticFields, "CriticRequest")):  # type: ignore[misc]  # from the section
    pass


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


answer_invalid_requests(api)


@serve.deployment(
    name="CriticService",
    num_replicas=1,
    ray_actor_options={"num_cpus": 0},  # the worker actors wait on the LLM; so does the replica
    max_ongoing_requests=20,
    graceful_shutdown_wait_loop_s=0.5,
    graceful_shutdown_timeout_s=2,
)
@serve.ingress(api)
class CriticService:
    def __init__(self, settings: Settings) -> None:
        from core.runtime import RayRuntime
        from core.store import open_store
        from critic.engine import WorkerPool

        self._settings = settings
        GUARD.configure(settings)
        self._store = open_store(settings)
        self._runtime = RayRuntime()
        self._pool = WorkerPool(self._runtime, settings.llm, CriticSettings.of(settings).max_workers)

    @api.get("/healthz")
    async def healthz(self) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @api.post("/evaluate")
    async def evaluate(self, body: CriticRequest) -> JSONResponse:
        from critic.engine import evaluate_ideas, preflight

        try:
            settings = CRITIC_OPTIONS.apply(self._settings, CRITIC_OPTIONS.from_body(body))
            preflight(settings)
        except LLMNotConfiguredError as exc:
            return _error(503, f"the critic service has no LLM configured: {first_line(exc)}")
        except ConfigError as exc:
            message = first_line(exc).removeprefix("invalid setting: ")
            return _error(422, f"invalid request: {without_server_paths(message)}")
        try:
            out = await evaluate_ideas(
                CriticInput(ideas=body.ideas), settings, self._runtime, store=self._store, pool=self._pool
            )
        except CriticError as exc:
            failures = {k: without_server_paths(v) for k, v in exc.failures.items()}
            return _error(502, "no idea could be evaluated; see failures", failures=failures)
        except MagiError as exc:
            log.warning("critic request failed: %s", first_line(exc))
            return _error(500, without_server_paths(first_line(exc)))
        return JSONResponse(out.model_dump(mode="json", by_alias=True))


def build_app(settings: Settings) -> Application:
    """The ``critic`` Serve application for these settings."""
    application: Application = CriticService.bind(settings)  # type: ignore[attr-defined]
    return application


def app(args: dict[str, Any]) -> Application:
    """Application builder for ``serve.yaml`` (``import_path: deployments.critic:app``); ``args`` are
    settings in ``magi.yaml`` shape over ``magi.yaml`` and the environment."""
    return build_app(settings_from_args(args))


__all__ = [
    "APP_NAME",
    "GUARD",
    "ROUTE_PREFIX",
    "CriticRequest",
    "CriticService",
    "app",
    "build_app",
]
