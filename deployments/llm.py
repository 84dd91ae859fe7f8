"""Serve app ``llm`` (route prefix ``/llm``): a GGUF model served by llama.cpp on CPU, speaking the
OpenAI chat completions API inside the cluster.

- ``POST /llm/v1/chat/completions``: an OpenAI chat completion body (``messages``, ``max_tokens``,
  ``tools``, ``response_format`` with a JSON schema: decoded under its grammar, ``stream``) ->
  the OpenAI response, or Server-Sent Events ending with ``data: [DONE]`` when streaming.
- ``GET /llm/v1/models``: the one model this app serves. ``GET /llm/healthz``: ``{"status": "ok"}``.

So ``llm.provider: openai`` with ``llm.base_url: http://<head>:8000/llm/v1`` and ``llm.model`` set to
``llm_server.model_name`` runs the systems on it, and ``llm.roles.<role>`` can send only some roles
here. Each replica loads the model once (``core.llm.local_model``) and decodes ``llm_server.parallel``
requests together; ``llm_server.min_replicas``/``max_replicas`` scale it (Serve's autoscaling on
requests in flight). Callers pass the app's guard like every app (API keys: the OpenAI SDK's
``Authorization: Bearer`` is the same header); one client (a key, or an address without keys) has at
most ``serve.client_in_flight`` requests in a replica (429 beyond). Errors carry their status, also
for a stream (a prompt over the context is 400 before the stream starts); a stream whose client left
stops its generation. The model reads text only: image or audio parts are 422.
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, StreamingResponse
from ray.serve import Application

from core.settings import Settings
from deployments.answers import event_stream, without_server_paths
from deployments.base import AppService, bind, builder, guard_of, http_api, service
from deployments.language import say
from deployments.llm_settings import LLMServerSettings
from deployments.readiness import Check, NotReady
from deployments.security import ClientBusyError, InFlightLimit
from deployments.settings import ServeSettings

log = logging.getLogger(__name__)
APP_NAME = "llm"
ROUTE_PREFIX = "/llm"
OFF = (
    "this cluster hosts no model: set llm_server.enabled (MAGI_LLM_SERVER_ENABLED=true) and install the "
    "llm-server extra and a GGUF model (see docs/models.md)"
)

api = http_api("MAGI llm", "A GGUF model on llama.cpp behind the OpenAI chat completions API.")
off_api = http_api("MAGI llm (off)", "Hosts no model until llm_server.enabled is set.")


def _error(
    status: int, message: str, kind: str = "invalid_request_error", headers: dict[str, str] | None = None
) -> JSONResponse:
    """An error in the OpenAI shape, so SDKs show the message."""
    body = {"error": {"message": message, "type": kind, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def check_body(body: Any) -> str | None:
    """What is wrong with a chat completion body, or None (llama.cpp checks the rest itself)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object (an OpenAI chat completion request)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list of {role, content} objects"
    for number, message in enumerate(messages):
        problem = _message_problem(message)
        if problem is not None:
            return f"messages[{number}]: {problem}"
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
        return "'max_tokens' must be a positive integer"
    return None


def _message_problem(message: Any) -> str | None:
    """What this model cannot take in one message: it reads text only (no image, audio or file parts)."""
    if not isinstance(message, dict):
        return "must be an object with 'role' and 'content'"
    content = message.get("content")
    if content is None or isinstance(content, str):
        return None
    if not isinstance(content, list):
        return "'content' must be text or a list of text parts"
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind != "text" or not isinstance(part.get("text"), str):
            return f"this model reads text only; a content part of type {str(kind)[:40]!r} cannot be read"
    return None


def _failure(answer: dict[str, Any]) -> JSONResponse | None:
    """llama.cpp's own error answer (a prompt over the context, a bad schema) with its status, not 200."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    status = code if isinstance(code, int) and 400 <= code <= 599 else 400
    message = without_server_paths(str(error.get("message") or "the model refused the request"))
    return _error(status, message, str(error.get("type") or "invalid_request_error"))


async def _frames(
    first: dict[str, Any], chunks: AsyncGenerator[dict[str, Any], None], done: Callable[[], None]
) -> AsyncIterator[bytes]:
    """OpenAI's stream framing: ``data: <chunk>`` lines, then ``data: [DONE]``. Closing it (the client
    left) closes ``chunks``, which stops the model's generation; ``done`` runs either way."""
    try:
        yield f"data: {json.dumps(first, ensure_ascii=False)}\n\n".encode()
        async for chunk in chunks:
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()
    except (ValueError, RuntimeError) as exc:  # refused after the headers went out: tell the client in the stream
        error = {"error": {"message": without_server_paths(str(exc)), "type": "invalid_request_error"}}
        yield f"data: {json.dumps(error, ensure_ascii=False)}\n\n".encode()
    finally:
        done()
        await chunks.aclose()
    yield b"data: [DONE]\n\n"


# llama.cpp's threads are real CPU work: the replica reserves llm_server.num_cpus (build_app).
@service(api, name="LLMServer", max_ongoing_requests=8)
class LLMServer(AppService):
    def __init__(self, settings: Settings) -> None:
        from core.llm.local_model import LocalModel

        super().__init__(settings)
        section = LLMServerSettings.of(settings)
        guard = guard_of(self.http_api)
        guard.max_body_bytes = max(guard.max_body_bytes, section.max_body_bytes)  # prompts are long
        started = time.perf_counter()
        self._model = LocalModel(section.llama_config())
        serve = ServeSettings.of(settings)
        self._in_flight = InFlightLimit(serve.client_in_flight)  # requests per client
        self._retry_after_s = serve.retry_after_s
        log.info("llm app: model %s loaded in %.1f s", section.model_name, time.perf_counter() - started)

        async def loaded() -> str:
            return f"{self._model.name} loaded"

        self.checks = [Check("model", loaded, owned=True)]

    @api.get("/v1/models")
    async def models(self) -> JSONResponse:
        entry = {"id": self._model.name, "object": "model", "created": 0, "owned_by": "magi-cluster"}
        return JSONResponse({"object": "list", "data": [entry]})

    @api.post("/v1/chat/completions")
    async def chat_completions(self, request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON; send an OpenAI chat completion request")
        problem = check_body(body)
        if problem is not None:
            return _error(422, problem)
        slot = self._in_flight.slot(self.client(request))
        try:
            slot.__enter__()
        except ClientBusyError as exc:
            retry = {"Retry-After": str(self._retry_after_s)}
            return _error(429, say(exc.key, self.language(request), limit=exc.limit), "rate_limit_error", retry)
        if body.get("stream"):
            return await self._stream(body, slot)
        # llama.cpp cannot stop an answer it is writing: a client that leaves keeps its slot until the
        # answer is done, so abandoned requests still count against its share
        work = asyncio.ensure_future(self._model.achat(body))
        work.add_done_callback(lambda _: slot.__exit__())
        try:
            answer = await asyncio.shield(work)
        except (ValueError, RuntimeError) as exc:  # llama.cpp refused the request (bad schema, image input...)
            return _error(400, without_server_paths(str(exc)))
        return _failure(answer) or JSONResponse(answer)

    async def _stream(self, body: dict[str, Any], slot: Any) -> Any:
        """A streamed answer; its status is known before the first byte: llama.cpp's refusal (a prompt
        over the context) is the first thing it reports, and is answered with its own status."""
        chunks = self._model.astream(body)
        try:
            first = await chunks.__anext__()
        except StopAsyncIteration:
            first = {}
        except (ValueError, RuntimeError) as exc:
            slot.__exit__()
            return _error(400, without_server_paths(str(exc)))
        except BaseException:
            slot.__exit__()
            raise
        refused = _failure(first)
        if refused is not None:
            slot.__exit__()
            await chunks.aclose()
            return refused
        stream: StreamingResponse = event_stream(_frames(first, chunks, slot.__exit__))
        return stream


@service(off_api, name="LLMServerOff", max_ongoing_requests=100)
class LLMServerOff(AppService):
    """What the app is while ``llm_server.enabled`` is off: not ready, and every route says how to turn it on."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)

        async def off() -> str:
            raise NotReady("llm_server.enabled is off")

        self.checks = [Check("model", off, hint=OFF)]

    @off_api.api_route("/v1/{path:path}", methods=["GET", "POST"])
    async def off(self, path: str) -> JSONResponse:
        return _error(503, OFF, "service_unavailable")


def build_app(settings: Settings) -> Application:
    """The ``llm`` Serve application: the model on replicas from ``llm_server``, or the 503 stand-in."""
    section = LLMServerSettings.of(settings)
    if not section.enabled:
        return bind(LLMServerOff, settings)
    return bind(LLMServer, settings, **section.deployment_options())


app = builder(build_app)

__all__ = ["APP_NAME", "OFF", "ROUTE_PREFIX", "LLMServer", "LLMServerOff", "api", "app", "build_app", "check_body"]
