"""Serve app ``magi`` (route prefix ``/magi``): the council over HTTP.

- ``POST /magi/ask`` ``{prompt, rounds?, threshold?, timeout?, weighted?, anonymous?, shufflePeers?,
  earlyStop?, seed?, runs?}`` -> 200 with the JSON of ``magi ask --format json`` (``decision``,
  ``exitCode``, ``votes`` ...; a RunsReport when ``runs`` > 1). A bad body is 422, no LLM 503.
- ``POST /magi/ask/stream`` (same body) -> ``text/event-stream``: ``phase``/``sage``/``decided``
  progress events as the deliberation goes, then one ``result`` event (or ``error``).
- ``GET /magi/healthz`` stays open; every other route is behind deployments/security.py (API keys,
  body cap).
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from ray.serve import Application

from core.errors import ConfigError, InputError, MagiError, first_line
from core.settings import Settings
from core.validation import printable
from deployments.app_args import settings_from_args
from deployments.security import ClientBusyError, InFlightLimit, guard, too_many
from deployments.validation import answer_invalid_requests
from sessions.ids import owner_of_bearer

log = logging.getLogger(__name__)
APP_NAME = "magi"
ROUTE_PREFIX = "/magi"

api = FastAPI(title="MAGI council", description="Three sages decide: Thinking, Debate, Voting.")
GUARD = guard(api)


class AskRequest(BaseModel):
    """The body of ``POST /magi/ask``; bounds come from the ``magi`` settings (magi/options.py)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    prompt: str = Field(description="The request the council decides on.")
    rounds: int | None = None
    threshold: Literal["majority", "unanimous"] | None = None
    timeout: float | None = Field(None, description="Timeout of one sage call in seconds.")
    weighted: bool | None = None
    anonymous: bool | None = None
    shuffle_peers: bool | None = Field(None, alias="shufflePeers")
    early_stop: Literal["off", "unanimous", "stable", "both"] | None = Field(None, alias="earlyStop")
    seed: int | None = None
    runs: int | None = None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


answer_invalid_requests(api)


def _sse(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


@serve.deployment(
    name="MagiCouncil",
    num_replicas=1,
    ray_actor_options={"num_cpus": 0},  # the sages are actors of their own; the replica waits
    max_ongoing_requests=32,
    graceful_shutdown_wait_loop_s=0.5,
    graceful_shutdown_timeout_s=2,
)
@serve.ingress(api)
class MagiService:
    def __init__(self, settings: Settings) -> None:
        from deployments.settings import ServeSettings
        from magi.plugins import load_plugins, overrides_for
        from magi.settings import MagiSettings

        GUARD.configure(settings)
        self._settings = settings
        self._serve = ServeSettings.of(settings)
        self._in_flight = InFlightLimit(self._serve.client_in_flight)
        self._overrides = overrides_for(load_plugins(MagiSettings.of(settings)))

    @api.get("/healthz")
    async def healthz(self) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    def _owner(self, request: Request) -> str:
        return owner_of_bearer(request.headers.get("authorization"), bool(self._settings.api_keys))

    def _prepare(self, body: AskRequest) -> tuple[str, Settings]:
        from magi.api import check_llm
        from magi.options import AskOptions, apply_options, clean_question
        from magi.settings import MagiSettings

        if body.runs is not None and body.runs > self._serve.max_runs:
            raise InputError(f"runs: at most {self._serve.max_runs} per request over HTTP (serve.max_runs)")
        options = AskOptions(
            rounds=body.rounds,
            threshold=body.threshold,
            timeout_s=body.timeout,
            weighted=body.weighted,
            anonymous=body.anonymous,
            shuffle_peers=body.shuffle_peers,
            early_stop=body.early_stop,
            seed=body.seed,
            runs=body.runs,
        )
        names = {"magi.shuffle_peers": "shufflePeers", "magi.early_stop": "earlyStop", "magi.timeout_s": "timeout"}
        settings = apply_options(self._settings, options, origin="request field", names=names)
        prompt = clean_question(body.prompt, max_chars=MagiSettings.of(settings).max_prompt_chars, where="prompt")
        check_llm(settings, "POST /magi/ask")
        return prompt, settings

    async def _run(self, prompt: str, settings: Settings, on_event: Any = None) -> dict[str, Any]:
        from core.runtime import RayRuntime
        from magi.api import ask
        from magi.output import to_json

        runtime = RayRuntime()
        try:
            return to_json(await ask(prompt, settings, runtime, overrides=self._overrides, on_event=on_event))
        finally:
            await runtime.close()

    def _refusal(self, exc: MagiError) -> JSONResponse:
        message = first_line(exc).removeprefix("invalid setting: ")
        if isinstance(exc, ConfigError) and "needs an LLM" in message:
            return _error(503, "no LLM is configured on this service; ask its operator")
        return _error(422, f"invalid request: {printable(message)}")

    @api.post("/ask")
    async def ask(self, body: AskRequest, request: Request) -> JSONResponse:
        try:
            prompt, settings = self._prepare(body)
        except (ConfigError, InputError) as exc:
            return self._refusal(exc)
        try:
            with self._in_flight.slot(self._owner(request)):
                return JSONResponse(await self._run(prompt, settings))
        except ClientBusyError as exc:
            response: JSONResponse = too_many(str(exc), self._serve.retry_after_s)
            return response

    @api.post("/ask/stream")
    async def ask_stream(self, body: AskRequest, request: Request) -> Any:
        try:
            prompt, settings = self._prepare(body)
        except (ConfigError, InputError) as exc:
            return self._refusal(exc)
        slot = self._in_flight.slot(self._owner(request))
        try:
            slot.__enter__()
        except ClientBusyError as exc:
            return too_many(str(exc), self._serve.retry_after_s)
        return StreamingResponse(
            self._stream(prompt, settings, slot),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, prompt: str, settings: Settings, slot: Any) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._events(prompt, settings):
                yield chunk
        finally:
            slot.__exit__()

    async def _events(self, prompt: str, settings: Settings) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        task = asyncio.ensure_future(self._run(prompt, settings, on_event=queue.put_nowait))
        try:
            while not task.done() or not queue.empty():
                try:
                    event = await asyncio.wait_for(queue.get(), timeout=0.25)
                except TimeoutError:
                    continue
                yield _sse(str(event.get("type", "progress")), event)
            try:
                yield _sse("result", task.result())
            except Exception as exc:  # the client sees why; the log keeps the detail
                log.warning("deliberation failed: %s", exc)
                yield _sse("error", {"error": printable(first_line(exc))})
        finally:
            if not task.done():  # the client went away: stop the deliberation
                task.cancel()


def build_app(settings: Settings) -> Application:
    application: Application = MagiService.bind(settings)  # type: ignore[attr-defined]
    return application


def app(args: dict[str, Any]) -> Application:
    """Application builder for ``serve.yaml`` (``import_path: deployments.magi:app``); ``args`` are
    settings in ``magi.yaml`` shape over ``magi.yaml`` and the environment."""
    return build_app(settings_from_args(args))


__all__ = ["APP_NAME", "GUARD", "ROUTE_PREFIX", "AskRequest", "MagiService", "api", "app", "build_app"]
