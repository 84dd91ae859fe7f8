"""The skeleton every Serve app stands on, so that an app module is its routes and nothing more.

An app module writes::

    api = http_api("MAGI critic", "what it does")        # guard, body cap, 422 answers, GET /healthz

    @service(api, name="CriticService", max_ongoing_requests=20)
    class CriticService(AppService):
        def __init__(self, settings: Settings) -> None:
            super().__init__(settings)                    # guard configured, logs routed through Serve
            self.store = open_store(settings)
            # what /healthz and Serve's probe test (deployments/readiness.py)
            self.checks = [store_check(self.store), llm_check(settings.llm, "POST /critic/evaluate")]

        @api.post("/evaluate")
        async def evaluate(self, body: CriticRequest) -> JSONResponse: ...

    build_app = binder(CriticService)                     # Settings -> Serve Application
    app = builder(build_app)                              # serve.yaml's import_path names this

What comes with it: API keys and the body cap (deployments/security.py, before any route), a 422 that
names each bad field (deployments/validation.py), error answers without server paths
(deployments/answers.py), a request id, a span and request metrics on every request
(deployments/telemetry.py), ``GET /healthz`` answering 200, or 503 when a readiness check fails (one
part per check for a caller with the key; the bare status for a probe without one), Serve's
``check_health`` failing on what a restart repairs (deployments/readiness.py), the caller's identity
for what it owns and for the per-client bounds (:meth:`AppService.caller`, :meth:`AppService.client`:
deployments/identity.py), Server-Sent Events streamed with
``event_stream`` (deployments/answers.py, frames from core/events.py), and Serve's logging config
(``logging.level``, ``logging.format``, ``serve.access_log``) also for the project's own loggers, in
the project's format (core/telemetry/logs.py), so every line carries the replica and the request id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from core.messages import Lang
from core.settings import Settings, load_settings
from core.telemetry.logs import dress_handlers
from core.telemetry.settings import LoggingSettings, TelemetrySettings
from core.telemetry.tracing import configure_tracing
from deployments.answers import answer_store_outages
from deployments.api_docs import add_api_docs
from deployments.identity import recalled
from deployments.language import language_of_headers
from deployments.pages import add_pages
from deployments.readiness import Check, NotReady, report, run_checks
from deployments.security import GuardConfig, guard
from deployments.settings import ServeSettings
from deployments.telemetry import RequestTelemetry
from deployments.upgrades import start_retiring
from deployments.validation import answer_invalid_requests

if TYPE_CHECKING:
    from ray.serve import Application
    from ray.serve.deployment import Deployment

log = logging.getLogger(__name__)
SERVE_LOGGER = "ray.serve"  # the logger Ray Serve configures in every replica (handlers, format, level)

# What every app's deployment shares: replicas wait on actors and I/O (zero CPUs of their own); a new
# code version rolls in with a new replica started before an old one stops (surge), and a replica
# being replaced finishes its requests first (serve.drain_s, applied by bind(); deployments/upgrades.py).
DEPLOYMENT_DEFAULTS: dict[str, Any] = {
    "num_replicas": 1,
    "ray_actor_options": {"num_cpus": 0},
    "graceful_shutdown_wait_loop_s": 0.5,
    "graceful_shutdown_timeout_s": 2,
    "max_surge_percent": 50,
}

# Serve runs a replica's code on a second event loop, in a thread of its own, by default. An app whose
# handlers never block (they await, and do well under a millisecond of local work between awaits) runs
# on the replica's main loop instead: two thread hand-offs and the GIL traffic between the threads go
# from every request (the router's turn, routed and written, took 1.2 ms of its replica's time instead of
# 0.7 ms, measured at concurrency 1 on a quiet 2-core machine; see benchmarks/router_load.py).
# Not for an app whose handler may block (a PDF, a model): it would hold up the replica's health checks.
MAIN_LOOP_ENV = {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0"}


def actor_options_with_env(env: dict[str, str]) -> dict[str, Any]:
    """The default ``ray_actor_options`` of a replica, with ``env`` in its environment."""
    return {**DEPLOYMENT_DEFAULTS["ray_actor_options"], "runtime_env": {"env_vars": env}}


def main_loop_actor_options(env: dict[str, str] | None = None) -> dict[str, Any]:
    """``ray_actor_options`` of a replica whose code runs on Serve's main loop (see :data:`MAIN_LOOP_ENV`),
    with ``env`` added to its environment."""
    return actor_options_with_env({**MAIN_LOOP_ENV, **(env or {})})


S = TypeVar("S", bound="AppService")


def http_api(
    title: str, description: str, *, open_paths: Iterable[str] = (), pages: Mapping[str, str] | None = None
) -> FastAPI:
    """The FastAPI app of one Serve app: guarded (API keys, body cap; ``/healthz``, ``open_paths`` and
    the ``pages`` need no key), answering validation failures with a clear 422, with ``GET /healthz``.
    ``pages`` maps an app path to its HTML file in data/pages (deployments/pages.py)."""
    api = FastAPI(title=title, description=description, docs_url=None, redoc_url=None)
    add_api_docs(api)  # Swagger UI from the app's own assets: the docs open with no network
    page_paths = add_pages(api, pages or {})
    api.state.guard = guard(api, open_paths=(*open_paths, *page_paths))
    answer_invalid_requests(api)
    answer_store_outages(api)  # a store restart answers 503 + Retry-After, not 500
    api.add_middleware(RequestTelemetry)  # added last: outermost, so the guard's refusals carry the id too
    # Registered as the base class's method: Serve's ingress turns it into a route of each replica.
    api.add_api_route("/healthz", AppService.healthz, methods=["GET"], summary="Readiness, one part per need")
    return api


def guard_of(api: FastAPI) -> GuardConfig:
    """The guard :func:`http_api` put in front of ``api``."""
    config: GuardConfig = api.state.guard
    return config


class AppService:
    """The replica side of the skeleton: the class every app's deployment extends."""

    http_api: ClassVar[FastAPI]  # set by :func:`service`

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # What this app needs to serve (store, LLM, warm workers), set by the app's constructor.
        self.checks: Sequence[Check] = ()
        guard = guard_of(self.http_api)
        guard.configure(settings)
        guard.reserve(_max_ongoing_requests())
        route_logs_through_serve(LoggingSettings.of(settings).format)
        configure_tracing(TelemetrySettings.of(settings).otlp_endpoint)
        self.retiring = start_retiring()  # agents of an older code go once unused (deployments/upgrades.py)

    def caller(self, request: Request) -> str:
        """Who is calling, for what they own (sessions, runs, files): the fingerprint of the API key the
        guard accepted, or the one local client when the service has no keys (deployments/identity.py)."""
        return recalled(request.scope).owner

    def client(self, request: Request) -> str:
        """Who a per-client bound counts: the caller's key, or without keys its address."""
        return recalled(request.scope).client

    def language(self, request: Request) -> Lang:
        """The language the caller reads (``Accept-Language``; Japanese unless English comes first)."""
        return language_of_headers(request.scope.get("headers") or [])

    async def healthz(self, request: Request) -> JSONResponse:
        """Every readiness check at once: 200 when all are ready, 503 when one is not. The parts (what
        each check found) only for a caller with a key; a probe without one gets the status and release."""
        status, body = report(await run_checks(self.checks))
        if not recalled(request.scope).admitted:
            body = {key: value for key, value in body.items() if key != "parts"}
        return JSONResponse(body, status_code=status)

    async def check_health(self) -> None:
        """Serve's periodic probe: raising makes Serve replace this replica, so only the checks a
        restart repairs count (dead workers, a stopped background task), never the store or the LLM."""
        owned = [c for c in self.checks if c.owned]
        failed = [p.name for p in await run_checks(owned) if not p.ready]
        if failed:
            raise NotReady(f"not ready: {', '.join(failed)}")


def _max_ongoing_requests() -> int | None:
    """This replica's ``max_ongoing_requests`` as Serve deployed it (None outside a replica)."""
    try:
        from ray import serve

        return int(serve.get_replica_context()._deployment_config.max_ongoing_requests)
    except Exception:  # not in a replica (an in-process test of the app)
        return None


def service(api: FastAPI, *, name: str, max_ongoing_requests: int, **options: Any) -> Callable[[type[S]], Deployment]:
    """Make an :class:`AppService` subclass the Serve deployment behind ``api`` (its routes are the
    class's methods); ``options`` add to or replace :data:`DEPLOYMENT_DEFAULTS`."""
    from ray import serve

    def wrap(cls: type[S]) -> Deployment:
        cls.http_api = api
        settings = {**DEPLOYMENT_DEFAULTS, **options}
        deployment: Deployment = serve.deployment(name=name, max_ongoing_requests=max_ongoing_requests, **settings)(
            serve.ingress(api)(cls)
        )
        return deployment

    return wrap


def logging_config(settings: Settings) -> dict[str, Any]:
    """Serve's ``logging_config`` of every app's deployment, from the ``serve`` settings."""
    section = ServeSettings.of(settings)
    logs = LoggingSettings.of(settings)
    return {
        "log_level": logs.level,
        "encoding": logs.format.upper(),
        "enable_access_log": section.access_log,
        # JSON lines name their logger too (text lines keep Serve's own layout)
        "additional_log_standard_attrs": ["name"] if logs.format == "json" else [],
    }


def route_logs_through_serve(fmt: Literal["text", "json"] = "text") -> None:
    """Send the project's log lines (``research.engine``, ``critic.engine`` ...) through the handlers
    Serve configured for this replica, at its level: one format, the replica's log file, the request
    id of the request being served. A replica is a process of its own, so its root logger is ours."""
    serve_logger = logging.getLogger(SERVE_LOGGER)
    if not serve_logger.handlers:  # not in a replica (a unit test): leave logging as it is
        return
    root = logging.getLogger()
    dress_handlers(list(serve_logger.handlers), fmt, serve_logger.level or logging.INFO)
    for handler in serve_logger.handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(serve_logger.level or logging.INFO)


def binder(deployment: Any, **options: Any) -> Callable[[Settings], Application]:
    """A ``build_app(settings)`` for a deployment that needs nothing but its settings."""

    def build_app(settings: Settings) -> Application:
        return bind(deployment, settings, **options)

    return build_app


def bind(deployment: Any, settings: Settings, **options: Any) -> Application:
    """The Serve application of ``deployment`` for ``settings``, with the logging config and ``options``
    (``num_replicas``, ``autoscaling_config`` ...)."""
    drain = {"graceful_shutdown_timeout_s": ServeSettings.of(settings).drain_s}
    application: Application = deployment.options(logging_config=logging_config(settings), **{**drain, **options}).bind(
        settings
    )
    return application


def settings_from_args(args: dict[str, Any] | None) -> Settings:
    """``args`` are settings in ``magi.yaml`` shape, over ``magi.yaml`` and the environment; the key
    ``config`` names another settings file."""
    args = dict(args or {})
    return load_settings(args.pop("config", None), args, origin="serve.yaml argument")


def builder(build_app: Callable[[Settings], Application]) -> Callable[[dict[str, Any]], Application]:
    """The application builder ``serve.yaml`` names (``import_path: deployments.x:app``)."""

    def app(args: dict[str, Any]) -> Application:
        """``args``: see :func:`settings_from_args`."""
        return build_app(settings_from_args(args))

    return app


__all__ = [
    "DEPLOYMENT_DEFAULTS",
    "MAIN_LOOP_ENV",
    "SERVE_LOGGER",
    "AppService",
    "actor_options_with_env",
    "bind",
    "binder",
    "builder",
    "guard_of",
    "http_api",
    "logging_config",
    "main_loop_actor_options",
    "route_logs_through_serve",
    "service",
    "settings_from_args",
]
