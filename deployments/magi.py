"""Serve app ``magi`` (route prefix ``/magi``): the council over HTTP.

- ``POST /magi/ask`` ``{prompt, rounds?, threshold?, quorum?, timeout?, weighted?, anonymous?,
  shufflePeers?, earlyStop?, seed?, runs?, ...}`` (every HTTP option of the council's settings
  section, camelCase) -> 200 with the JSON of ``magi ask --format json`` (``decision``,
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
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from ray.serve import Application

from core.errors import ConfigError, InputError, MagiError, first_line
from core.settings import Settings
from core.validation import printable
from deployments.app_args import settings_from_args
from deployments.security import guard
from deployments.validation import answer_invalid_requests
from magi.settings import COUNCIL_OPTIONS

log = logging.getLogger(__name__)
APP_NAME = "magi"
ROUTE_PREFIX = "/magi"

api = FastAPI(title="MAGI council", description="Three sages decide: Thinking, Debate, Voting.")
GUARD = guard(api)


class _AskFields(BaseModel):
    """The body of ``POST /magi/ask``: the prompt, plus every council option (``COUNCIL_OPTIONS``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    prompt: str = Field(description="The request the council decides on.")


class AskRequest(COUNCIL_OPTIONS.body(_AskFields, "AskRequest")):  # type: ignore[misc]  # fields from the section
    pass


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
        from magi.plugins import load_plugins, overrides_for
        from magi.settings import CouncilSettings

        GUARD.configure(settings)
        self._settings = settings
        self._overrides = overrides_for(load_plugins(CouncilSettings.of(settings)))

    @api.get("/healthz")
    async def healthz(self) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    def _prepare(self, body: AskRequest) -> tuple[str, Settings]:
        from magi.api import check_llm
        from magi.question import clean_question
        from magi.settings import CouncilSettings

        settings = COUNCIL_OPTIONS.apply(self._settings, COUNCIL_OPTIONS.from_body(body))
        prompt = clean_question(body.prompt, max_chars=CouncilSettings.of(settings).max_prompt_chars, where="prompt")
        check_llm(settings.llm, "POST /magi/ask")
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
    async def ask(self, body: AskRequest) -> JSONResponse:
        try:
            prompt, settings = self._prepare(body)
        except (ConfigError, InputError) as exc:
            return self._refusal(exc)
        return JSONResponse(await self._run(prompt, settings))

    @api.post("/ask/stream")
    async def ask_stream(self, body: AskRequest) -> Any:
        try:
            prompt, settings = self._prepare(body)
        except (ConfigError, InputError) as exc:
            return self._refusal(exc)
        return StreamingResponse(
            self._stream(prompt, settings),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, prompt: str, settings: Settings) -> AsyncIterator[bytes]:
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
