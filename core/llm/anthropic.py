"""Anthropic Messages API adapter (also for Anthropic-compatible servers: llama.cpp, vLLM, Ollama).

The SDK's own retries are switched off (``max_retries=0``) and ``core.retry`` owns the loop, so the
backoff is the configured one (``llm_backoff_initial_s`` doubling up to ``llm_backoff_max_s``, times
a jitter in [0.75, 1]; a server's ``retry-after(-ms)`` wins, up to ``RETRY_AFTER_CAP_S``). A 429/529
with a retry-after is also reported to the cluster-wide limiter (``core.llm.limiter``), which then
holds back every caller, not only this one.

Messages travel as typed parts: tool calls become ``tool_use`` blocks, tool results ``tool_result``
blocks, and both come back the same way. ``stream`` uses ``messages.stream`` (retrying only until the
first event arrives) and ends with the same ``LLMResponse`` that ``complete`` would return.

Structured output first uses ``messages.parse`` with ``output_config.format`` (a JSON schema; the
SDK's ``output_format=`` only takes Python types). A server that rejects that (400/422) or ignores
it (no JSON in the answer) gets a forced tool call instead, and the client remembers the path that
worked. ``temperature`` goes in the body (the SDK signature no longer has it) and is dropped for the
rest of the client's life if the model rejects it.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, cast

import anthropic
import httpx2

from core.errors import LLMError, LLMNotConfiguredError
from core.llm.base import (
    LLMRequest,
    LLMResponse,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    output_from_text,
)
from core.llm.cost import UsageMeter
from core.llm.provider_retry import PAUSE_STATUSES, RETRY_AFTER_CAP_S, provider_retry_delay, with_provider_retries
from core.llm.roles import Endpoint
from core.llm.streaming import StreamEnd, StreamEvent, TextDelta
from core.retry import retry_after_s
from core.settings import LLMSettings

DEFAULT_BASE_URL = "https://api.anthropic.com"
# Keyless local servers still get an x-api-key header; they ignore it unless configured with a key.
PLACEHOLDER_KEY = "no-key"
# System prompts this long are sent as a cached block (shorter ones are below the cache minimum).
CACHE_MIN_SYSTEM_CHARS = 4000
# A server's retry-after is honoured up to this many seconds.
RETRY_STATUSES = frozenset({408, 409, 429})
# Statuses whose retry-after pauses every caller of the cluster (rate limited, overloaded).
REJECTION_STATUSES = frozenset({400, 422})
DEFAULT_OUTPUT_NAME = "emit_output"

StructuredMode = Literal["unknown", "native", "tool"]
Sleep = Callable[[float], Awaitable[None]]


def _is_retryable(exc: Exception) -> bool:
    if isinstance(exc, anthropic.APIStatusError):
        if exc.response.headers.get("x-should-retry") == "false":  # the server knows a retry is futile
            return False
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return isinstance(exc, anthropic.APIConnectionError | TimeoutError)


def _block(part: TextPart | ToolCallPart | ToolResultPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    return {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": part.content, "is_error": part.is_error}


def wire_message(message: Message) -> dict[str, Any]:
    """A message in the Messages API shape (a plain string stays a string)."""
    if isinstance(message.content, str):
        return {"role": message.role, "content": message.content}
    return {"role": message.role, "content": [_block(p) for p in message.content]}


class AnthropicClient:
    """``LLMClient`` over ``anthropic.AsyncAnthropic``; picklable (rebuilt from settings elsewhere).

    ``endpoint`` (a role's own server and key variable, see core.llm.roles) replaces
    ``llm.anthropic_base_url`` and ``ANTHROPIC_API_KEY`` when given.
    """

    retries_itself = True  # callers must not add their own retry loop on top

    def __init__(
        self,
        llm: LLMSettings,
        http_client: httpx2.AsyncClient | None = None,
        *,
        endpoint: Endpoint | None = None,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.endpoint = endpoint
        key = llm.anthropic_api_key.get_secret_value() if llm.anthropic_api_key else ""
        base_url = (endpoint.base_url if endpoint else None) or llm.anthropic_base_url
        if endpoint is not None and endpoint.api_key_env:
            key = os.environ.get(endpoint.api_key_env, "").strip()
            if not key:
                raise LLMNotConfiguredError(
                    f"the Anthropic endpoint {base_url or DEFAULT_BASE_URL} takes its key from the environment "
                    f"variable {endpoint.api_key_env}, which is not set; export it (on every node of a cluster)"
                )
        if not key and not base_url:
            raise LLMNotConfiguredError(
                "MAGI_LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY (for api.anthropic.com) or "
                "ANTHROPIC_BASE_URL (for an Anthropic-compatible server such as llama.cpp, vLLM or Ollama)"
            )
        self.llm = llm
        self.base_url = base_url or DEFAULT_BASE_URL
        self.usage = UsageMeter()
        self.structured_mode: StructuredMode = "unknown"
        self._send_temperature = True
        self._sleep = sleep
        self._jitter = jitter
        # Explicit key and base URL: the SDK then reads no credential files or env variables itself.
        self._sdk = anthropic.AsyncAnthropic(
            api_key=key or PLACEHOLDER_KEY,
            base_url=self.base_url,
            max_retries=0,
            timeout=llm.timeout_s,
            http_client=http_client,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from settings: an injected http_client/sleep and the learned modes stay behind.
        if self.endpoint is None:
            return (type(self), (self.llm,))
        return (_rebuild, (self.llm, self.endpoint))

    async def aclose(self) -> None:
        """Close the underlying HTTP client."""
        await self._sdk.close()

    def model_for(self, request: LLMRequest) -> str:
        """The model sent: the request's (set from its role), else ``llm.model``."""
        return request.model or self.llm.model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        timeout = request.timeout_s or self.llm.timeout_s
        try:
            response = await self._complete(request, timeout)
        except TimeoutError as exc:
            raise self._timeout_error(request, timeout) from exc
        except anthropic.APIError as exc:
            raise self._error(exc, self.model_for(request)) from exc
        self.usage.add(response)
        return response

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Text deltas as the server sends them, then ``StreamEnd``; structured output is not streamed."""
        if request.output_schema is not None:
            response = await self.complete(request)
            if response.text:
                yield TextDelta(response.text)
            yield StreamEnd(response)
            return
        timeout = request.timeout_s or self.llm.timeout_s
        model = self.model_for(request)
        params = self._params(request)

        async def open_stream() -> tuple[Any, Any]:
            manager = self._sdk.messages.stream(**params, timeout=timeout)
            async with asyncio.timeout(timeout):
                return manager, await manager.__aenter__()

        try:
            manager, events = await self._with_retries(open_stream)
        except TimeoutError as exc:
            raise self._timeout_error(request, timeout) from exc
        except anthropic.APIError as exc:
            raise self._error(exc, model) from exc
        sent = 0
        try:
            async for event in events:
                if event.type == "text" and event.text:
                    sent += 1
                    yield TextDelta(event.text)
            message = await events.get_final_message()
        except anthropic.APIError as exc:
            raise self._error(exc, model) from exc
        except httpx2.HTTPError as exc:  # the connection broke mid-stream: deltas already went out, no retry here
            raise LLMError(
                f"the LLM stream from {self.base_url} (model {model}) broke off after {sent} text deltas: "
                f"{type(exc).__name__}: {exc}; retry the whole call",
                model=model,
                retryable=True,
            ) from exc
        finally:
            await manager.__aexit__(None, None, None)
        response = self._convert(message, None)
        self.usage.add(response)
        yield StreamEnd(response)

    def _timeout_error(self, request: LLMRequest, timeout: float) -> LLMError:
        model = self.model_for(request)
        return LLMError(
            f"LLM request to {self.base_url} (model {model}) timed out after {timeout:g} s "
            f"({self.llm.max_retries} retries); raise MAGI_LLM_TIMEOUT_S or check the server",
            model=model,
            retryable=True,
        )

    async def _complete(self, request: LLMRequest, timeout: float) -> LLMResponse:
        if request.output_schema is None:
            return self._convert(await self._send(self._params(request), timeout, parse=False), None)
        if self.structured_mode != "tool":
            response = await self._native(request, timeout)
            if response is not None:
                return response
        response = self._tool_output(request, await self._send(self._tool_params(request), timeout, parse=False))
        if response.output is not None and self.structured_mode == "unknown":
            self.structured_mode = "tool"
        return response

    async def _native(self, request: LLMRequest, timeout: float) -> LLMResponse | None:
        """Structured output via ``messages.parse``; None means "use the forced-tool fallback"."""
        assert request.output_schema is not None
        params = self._params(request)
        params["output_config"] = {
            "format": {"type": "json_schema", "schema": anthropic.transform_schema(request.output_schema)}
        }
        try:
            message = await self._send(params, timeout, parse=True)
        except anthropic.APIStatusError as exc:
            if self.structured_mode == "unknown" and exc.status_code in REJECTION_STATUSES:
                return None  # the server does not know output_config (or this schema): fall back
            raise
        response = self._convert(message, None)
        output = output_from_text(response.text)
        if output is None and self.structured_mode == "unknown":
            return None  # accepted but ignored (typical of compatible servers): fall back
        self.structured_mode = "native"
        return response.model_copy(update={"output": output})

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model_for(request),
            "max_tokens": request.max_tokens,
            "messages": [wire_message(m) for m in request.messages],
        }
        if len(request.system) >= CACHE_MIN_SYSTEM_CHARS:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        elif request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = [t.model_dump() for t in request.tools]
            if request.tool_choice == "required":
                params["tool_choice"] = {"type": "any"}
        if self._send_temperature:
            # SDK >= 1.0 dropped `temperature` from the signature; the API still takes it in the body.
            params["extra_body"] = {"temperature": request.temperature}
        return params

    def _tool_params(self, request: LLMRequest) -> dict[str, Any]:
        assert request.output_schema is not None
        name = request.output_name or DEFAULT_OUTPUT_NAME
        params = self._params(request)
        emit = {"name": name, "description": "Return the final answer.", "input_schema": request.output_schema}
        params["tools"] = [*params.get("tools", []), emit]
        params["tool_choice"] = {"type": "tool", "name": name}
        return params

    async def _send(self, params: dict[str, Any], timeout: float, *, parse: bool) -> anthropic.types.Message:
        """One logical call with the configured retries; drops ``temperature`` once if the model rejects it."""
        try:
            return await self._send_with_retries(params, timeout, parse=parse)
        except anthropic.BadRequestError as exc:
            if "extra_body" not in params or "temperature" not in str(exc.message).lower():
                raise
        self._send_temperature = False
        return await self._send_with_retries(
            {k: v for k, v in params.items() if k != "extra_body"}, timeout, parse=parse
        )

    async def _send_with_retries(
        self, params: dict[str, Any], timeout: float, *, parse: bool
    ) -> anthropic.types.Message:
        async def attempt() -> anthropic.types.Message:
            try:
                async with asyncio.timeout(timeout):
                    if parse:
                        return await self._sdk.messages.parse(**params, timeout=timeout)
                    created = await self._sdk.messages.create(**params, timeout=timeout)
                    return cast(anthropic.types.Message, created)  # no stream= given: a Message
            except anthropic.APITimeoutError as exc:
                raise TimeoutError(str(exc)) from exc

        message: anthropic.types.Message = await self._with_retries(attempt)
        return message

    async def _with_retries(self, call: Callable[[], Awaitable[Any]]) -> Any:
        return await with_provider_retries(
            call,
            llm=self.llm,
            status_error=anthropic.APIStatusError,
            api_error=anthropic.APIError,
            is_retryable=_is_retryable,
            delay=self.retry_delay,
            sleep=self._sleep,
        )

    def retry_delay(self, attempt: int, exc: Exception | None = None) -> float:
        """The server's retry-after, else capped exponential backoff with jitter."""
        return provider_retry_delay(
            attempt, exc, llm=self.llm, status_error=anthropic.APIStatusError, jitter=self._jitter
        )

    def _convert(self, message: anthropic.types.Message, output: dict[str, Any] | None) -> LLMResponse:
        text = "".join(block.text for block in message.content if block.type == "text")
        calls = [
            ToolCallPart(id=block.id, name=block.name, arguments=dict(block.input))
            for block in message.content
            if block.type == "tool_use"
        ]
        u = message.usage
        usage = Usage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_creation_input_tokens=u.cache_creation_input_tokens or 0,
            cache_read_input_tokens=u.cache_read_input_tokens or 0,
        )
        return LLMResponse(
            text=text,
            tool_calls=calls,
            output=output,
            usage=usage,
            model=str(message.model),
            stop_reason=message.stop_reason,
        )

    def _tool_output(self, request: LLMRequest, message: anthropic.types.Message) -> LLMResponse:
        """The forced tool call's input becomes ``output`` (and is not reported as a tool call)."""
        name = request.output_name or DEFAULT_OUTPUT_NAME
        response = self._convert(message, None)
        emitted = [c for c in response.tool_calls if c.name == name]
        return response.model_copy(
            update={
                "output": emitted[0].arguments if emitted else None,
                "tool_calls": [c for c in response.tool_calls if c.name != name],
            }
        )

    def _error(self, exc: anthropic.APIError, model: str) -> LLMError:
        where = f"{self.base_url} (model {model})"
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            hint = {
                401: "check ANTHROPIC_API_KEY",
                403: "check that ANTHROPIC_API_KEY may use this model",
                404: "check MAGI_LLM_MODEL (or llm.models) and ANTHROPIC_BASE_URL",
                429: "rate limited; retry later, lower llm.max_concurrency or raise MAGI_LLM_MAX_RETRIES",
            }.get(status, "check the request, MAGI_LLM_MODEL and ANTHROPIC_BASE_URL")
            if status >= 500:
                hint = "the server failed or is overloaded; retry later"
            return LLMError(
                f"LLM request to {where} failed with HTTP {status}: {exc.message}; {hint}",
                status_code=status,
                model=model,
                retryable=_is_retryable(exc),
                retry_after_s=retry_after_s(exc.response.headers, cap_s=RETRY_AFTER_CAP_S),
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return LLMError(
                f"cannot connect to the LLM server {self.base_url} "
                f"(after {self.llm.max_retries} retries): {exc}; check ANTHROPIC_BASE_URL",
                model=model,
                retryable=True,
            )
        return LLMError(f"LLM request to {where} failed: {exc}; check the server's logs", model=model)


def _rebuild(llm: LLMSettings, endpoint: Endpoint) -> AnthropicClient:
    return AnthropicClient(llm, endpoint=endpoint)


__all__ = [
    "CACHE_MIN_SYSTEM_CHARS",
    "DEFAULT_BASE_URL",
    "DEFAULT_OUTPUT_NAME",
    "PAUSE_STATUSES",
    "PLACEHOLDER_KEY",
    "REJECTION_STATUSES",
    "RETRY_AFTER_CAP_S",
    "RETRY_STATUSES",
    "AnthropicClient",
    "Sleep",
    "StructuredMode",
    "wire_message",
]
