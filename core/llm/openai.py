"""OpenAI chat completions adapter: api.openai.com and every server that speaks the same API (Ollama,
vLLM, llama.cpp's server, LM Studio, Ray Serve LLM, this project's ``llm`` app, most hosted models).

Retries, backoff and rate-limit reports work as in the Anthropic adapter (``core.retry`` owns the
loop; the SDK's own retries are off; a 429 with retry-after pauses the whole cluster through
``core.llm.limiter``), and failures become the same ``LLMError`` fields.

Messages travel as typed parts: tool calls become ``tool_calls`` of an assistant message, tool
results ``tool`` messages. Servers whose model has no tool template (``tool_calling: prompted``)
get the tools described in the system prompt instead, and the model answers with one JSON object
(tool calls, or the answer) under the server's JSON-schema decoding, so even a small model's calls
are well formed.

Structured output first asks for ``response_format: json_schema`` (constrained decoding on vLLM,
llama.cpp, Ollama, OpenAI; arrays capped for the decoder at ``llm.schema_max_items``, see
core.llm.schema_bounds); a server that rejects it (400/422) or ignores it (no JSON back) gets a
forced function call, and one that rejects that too gets the plain prompt (``generate`` then
validates and repairs). The client remembers the path that worked. ``temperature`` is dropped and
``max_tokens`` becomes ``max_completion_tokens`` for the rest of the client's life when a model
rejects them (OpenAI's reasoning models do).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import httpx2
import openai

from core.errors import LLMError, LLMNotConfiguredError
from core.llm.base import (
    LLMRequest,
    LLMResponse,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
    output_from_text,
)
from core.llm.cost import UsageMeter
from core.llm.prompted_tools import PromptedTools
from core.llm.provider_retry import PAUSE_STATUSES, RETRY_AFTER_CAP_S, provider_retry_delay, with_provider_retries
from core.llm.roles import Endpoint
from core.llm.schema_bounds import bounded
from core.llm.streaming import StreamEnd, StreamEvent, TextDelta
from core.retry import retry_after_s
from core.settings import LLMSettings

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "no-key"  # local servers without a key still get an Authorization header; they ignore it
RETRY_STATUSES = frozenset({408, 409, 429})
REJECTION_STATUSES = frozenset({400, 422})
DEFAULT_OUTPUT_NAME = "emit_output"

StructuredMode = Literal["unknown", "native", "tool", "prompt"]
Sleep = Callable[[float], Awaitable[None]]
_call_ids = itertools.count(1)


def _is_retryable(exc: Exception) -> bool:
    if isinstance(exc, openai.APIStatusError):
        if exc.response.headers.get("x-should-retry") == "false":
            return False
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError | TimeoutError)


def _rejects(exc: openai.APIStatusError, word: str) -> bool:
    return exc.status_code in REJECTION_STATUSES and word in str(exc.message).lower()


def wire_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation in the chat completions shape: tool calls on the assistant, results as ``tool``."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message.content, str):
            wire.append({"role": message.role, "content": message.content})
            continue
        texts = [p.text for p in message.content if isinstance(p, TextPart)]
        calls = [p for p in message.content if isinstance(p, ToolCallPart)]
        results = [p for p in message.content if isinstance(p, ToolResultPart)]
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                    }
                    for c in calls
                ]
            wire.append(entry)
            continue
        for result in results:
            content = f"error: {result.content}" if result.is_error else result.content
            wire.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": content})
        if texts:
            wire.append({"role": "user", "content": "".join(texts)})
    return wire


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.input_schema},
    }


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    prompt = int(raw.prompt_tokens or 0)
    return Usage(
        input_tokens=max(0, prompt - cached),  # cached tokens are priced apart (cache_read)
        output_tokens=int(raw.completion_tokens or 0),
        cache_read_input_tokens=cached,
    )


def _arguments(text: str | None) -> dict[str, Any]:
    """A tool call's arguments; text that is not a JSON object is kept, so the tool loop can say so."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"_unparsed_arguments": text}
    return value if isinstance(value, dict) else {"_unparsed_arguments": text}


def _call(call_id: str | None, name: str, arguments: str | None) -> ToolCallPart:
    return ToolCallPart(id=call_id or f"call_{next(_call_ids)}", name=name, arguments=_arguments(arguments))


class OpenAIClient:
    """``LLMClient`` over ``openai.AsyncOpenAI``; picklable (rebuilt from settings and endpoint elsewhere)."""

    retries_itself = True  # callers must not add their own retry loop on top

    def __init__(
        self,
        llm: LLMSettings,
        endpoint: Endpoint | None = None,
        http_client: httpx2.AsyncClient | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.llm = llm
        self.endpoint = endpoint or Endpoint("openai", base_url=llm.base_url, tool_calling=llm.tool_calling)
        key = self._key()
        if not key and not self.endpoint.base_url:
            raise LLMNotConfiguredError(
                "MAGI_LLM_PROVIDER=openai needs OPENAI_API_KEY (for api.openai.com) or MAGI_LLM_BASE_URL "
                "(for an OpenAI-compatible server such as Ollama, vLLM, llama.cpp or LM Studio)"
            )
        self.base_url = self.endpoint.base_url or DEFAULT_BASE_URL
        self.usage = UsageMeter()
        self.structured_mode: StructuredMode = "unknown"
        self._send_temperature = True
        self._max_tokens_key = "max_tokens"
        self._sleep = sleep
        self._jitter = jitter
        self._sdk = openai.AsyncOpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=self.base_url,
            max_retries=0,
            timeout=llm.timeout_s,
            http_client=http_client,
        )

    def _key(self) -> str:
        variable = self.endpoint.api_key_env
        if variable:
            key = os.environ.get(variable, "").strip()
            if not key:
                raise LLMNotConfiguredError(
                    f"the LLM endpoint {self.endpoint.base_url or DEFAULT_BASE_URL} takes its key from the "
                    f"environment variable {variable}, which is not set; export it (on every node of a cluster)"
                )
            return key
        secret = self.llm.openai_api_key
        return secret.get_secret_value() if secret else ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.llm, self.endpoint))

    async def aclose(self) -> None:
        await self._sdk.close()

    def model_for(self, request: LLMRequest) -> str:
        return request.model or self.llm.model

    # --- complete -------------------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:
        timeout = request.timeout_s or self.llm.timeout_s
        try:
            response = await self._complete(request, timeout)
        except TimeoutError as exc:
            raise self._timeout_error(request, timeout) from exc
        except openai.APIError as exc:
            raise self._error(exc, self.model_for(request)) from exc
        self.usage.add(response)
        return response

    async def _complete(self, request: LLMRequest, timeout: float) -> LLMResponse:
        if request.tools and self.endpoint.tool_calling == "prompted":
            return await self._prompted(request, timeout)
        if request.output_schema is None:
            return self._convert(await self._send(self._params(request), timeout))
        if self.structured_mode in ("unknown", "native"):
            response = await self._native(request, timeout)
            if response is not None:
                return response
        if self.structured_mode in ("unknown", "tool"):
            response = await self._forced_tool(request, timeout)
            if response is not None:
                return response
        self.structured_mode = "prompt"
        response = self._convert(await self._send(self._params(request), timeout))
        return response.model_copy(update={"output": output_from_text(response.text)})

    async def _native(self, request: LLMRequest, timeout: float) -> LLMResponse | None:
        """``response_format: json_schema``; None means "try the next path"."""
        assert request.output_schema is not None
        params = self._params(request)
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": request.output_name or DEFAULT_OUTPUT_NAME,
                "schema": self._bounded(request.output_schema),
            },
        }
        try:
            response = self._convert(await self._send(params, timeout))
        except openai.APIStatusError as exc:
            if self.structured_mode == "unknown" and exc.status_code in REJECTION_STATUSES:
                return None
            raise
        output = output_from_text(response.text)
        if output is None and self.structured_mode == "unknown" and response.stop_reason != "length":
            return None  # accepted but ignored; a cut-off answer is the budget's fault, not the server's
        self.structured_mode = "native"
        return response.model_copy(update={"output": output})

    async def _forced_tool(self, request: LLMRequest, timeout: float) -> LLMResponse | None:
        """The schema as a function the model must call; None when the server refuses forced calls."""
        assert request.output_schema is not None
        name = request.output_name or DEFAULT_OUTPUT_NAME
        params = self._params(request)
        emit = ToolSpec(name=name, description="Return the final answer.", input_schema=request.output_schema)
        params["tools"] = [*params.get("tools", []), wire_tool(emit)]
        params["tool_choice"] = {"type": "function", "function": {"name": name}}
        try:
            response = self._convert(await self._send(params, timeout))
        except openai.APIStatusError as exc:
            if self.structured_mode == "unknown" and exc.status_code in REJECTION_STATUSES:
                return None
            raise
        emitted = [c for c in response.tool_calls if c.name == name]
        if not emitted and self.structured_mode == "unknown":
            return None
        self.structured_mode = "tool"
        return response.model_copy(
            update={
                "output": emitted[0].arguments if emitted else output_from_text(response.text),
                "tool_calls": [c for c in response.tool_calls if c.name != name],
            }
        )

    async def _prompted(self, request: LLMRequest, timeout: float) -> LLMResponse:
        """Tools described in the prompt; the model's one JSON object becomes tool calls or the answer."""
        plan = PromptedTools(request)
        params = self._params(request.model_copy(update={"tools": [], "system": plan.system}))
        params["messages"] = wire_messages(plan.system, plan.messages)
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "tool_calls_or_answer", "schema": self._bounded(plan.schema)},
        }
        response = self._convert(await self._send(params, timeout))
        calls, text, output = plan.parse(response.text, lambda: f"call_{next(_call_ids)}")
        return response.model_copy(
            update={
                "tool_calls": calls,
                "text": text,
                "output": output,
                "stop_reason": "tool_calls" if calls else response.stop_reason,
            }
        )

    def _bounded(self, schema: dict[str, Any]) -> dict[str, Any]:
        llm = self.llm
        capped: dict[str, Any] = bounded(schema, llm.schema_max_items, llm.schema_max_string_chars)
        return capped

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model_for(request),
            "messages": wire_messages(request.system, request.messages),
            self._max_tokens_key: request.max_tokens,
        }
        if self._send_temperature:
            params["temperature"] = request.temperature
        if request.tools:
            params["tools"] = [wire_tool(t) for t in request.tools]
            if request.tool_choice is not None:
                params["tool_choice"] = request.tool_choice
        return params

    async def _send(self, params: dict[str, Any], timeout: float) -> Any:
        """One logical call with retries; adapts once to a model that rejects temperature or max_tokens."""
        try:
            return await self._send_with_retries(params, timeout)
        except openai.APIStatusError as exc:
            if "temperature" in params and _rejects(exc, "temperature"):
                self._send_temperature = False
                params = {k: v for k, v in params.items() if k != "temperature"}
            elif "max_tokens" in params and _rejects(exc, "max_tokens"):
                self._max_tokens_key = "max_completion_tokens"
                params = {("max_completion_tokens" if k == "max_tokens" else k): v for k, v in params.items()}
            else:
                raise
        return await self._send(params, timeout)

    async def _send_with_retries(self, params: dict[str, Any], timeout: float) -> Any:
        async def attempt() -> Any:
            try:
                async with asyncio.timeout(timeout):
                    return await self._sdk.chat.completions.create(**params, timeout=timeout)
            except openai.APITimeoutError as exc:
                raise TimeoutError(str(exc)) from exc

        return await self._with_retries(attempt)

    async def _with_retries(self, call: Callable[[], Awaitable[Any]]) -> Any:
        return await with_provider_retries(
            call,
            llm=self.llm,
            status_error=openai.APIStatusError,
            api_error=openai.APIError,
            is_retryable=_is_retryable,
            delay=self.retry_delay,
            sleep=self._sleep,
        )

    def retry_delay(self, attempt: int, exc: Exception | None = None) -> float:
        """The server's retry-after, else capped exponential backoff with jitter."""
        return provider_retry_delay(attempt, exc, llm=self.llm, status_error=openai.APIStatusError, jitter=self._jitter)

    def _convert(self, completion: Any) -> LLMResponse:
        if not completion.choices:
            raise LLMError(
                f"the LLM server {self.base_url} answered without any choice (model {completion.model}); "
                "check the server's logs",
                model=str(completion.model or ""),
                retryable=True,
            )
        choice = completion.choices[0]
        message = choice.message
        calls = [
            _call(c.id, c.function.name, c.function.arguments)
            for c in (message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        return LLMResponse(
            text=message.content or "",
            tool_calls=calls,
            usage=_usage(completion.usage),
            model=str(completion.model or ""),
            stop_reason=choice.finish_reason,
        )

    # --- stream ---------------------------------------------------------------------------------

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Text deltas as the server sends them, then ``StreamEnd``; structured and prompted-tool calls are
        answered whole (their text is JSON, not prose for a person)."""
        if request.output_schema is not None or (request.tools and self.endpoint.tool_calling == "prompted"):
            response = await self.complete(request)
            if response.text:
                yield TextDelta(response.text)
            yield StreamEnd(response)
            return
        timeout = request.timeout_s or self.llm.timeout_s
        model = self.model_for(request)
        params = {**self._params(request), "stream": True, "stream_options": {"include_usage": True}}

        async def open_stream() -> Any:
            async with asyncio.timeout(timeout):
                return await self._sdk.chat.completions.create(**params, timeout=timeout)

        try:
            chunks = await self._with_retries(open_stream)
        except TimeoutError as exc:
            raise self._timeout_error(request, timeout) from exc
        except openai.APIError as exc:
            raise self._error(exc, model) from exc
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage, answered_model, stop = Usage(), model, None
        try:
            async for chunk in chunks:
                answered_model = chunk.model or answered_model
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices or []:
                    stop = choice.finish_reason or stop
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        yield TextDelta(delta.content)
                    for piece in delta.tool_calls or []:
                        call = calls.setdefault(piece.index, {"id": None, "name": "", "arguments": ""})
                        call["id"] = piece.id or call["id"]
                        if piece.function is not None:
                            call["name"] += piece.function.name or ""
                            call["arguments"] += piece.function.arguments or ""
        except openai.APIError as exc:
            raise self._error(exc, model) from exc
        except httpx2.HTTPError as exc:
            raise LLMError(
                f"the LLM stream from {self.base_url} (model {model}) broke off after {len(text)} text deltas: "
                f"{type(exc).__name__}: {exc}; retry the whole call",
                model=model,
                retryable=True,
            ) from exc
        response = LLMResponse(
            text="".join(text),
            tool_calls=[_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())],
            usage=usage,
            model=answered_model,
            stop_reason=stop,
        )
        self.usage.add(response)
        yield StreamEnd(response)

    # --- errors ---------------------------------------------------------------------------------

    def _timeout_error(self, request: LLMRequest, timeout: float) -> LLMError:
        model = self.model_for(request)
        return LLMError(
            f"LLM request to {self.base_url} (model {model}) timed out after {timeout:g} s "
            f"({self.llm.max_retries} retries); raise MAGI_LLM_TIMEOUT_S or check the server",
            model=model,
            retryable=True,
        )

    def _error(self, exc: openai.APIError, model: str) -> LLMError:
        where = f"{self.base_url} (model {model})"
        key = self.endpoint.api_key_env or "OPENAI_API_KEY"
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            hint = {
                401: f"check {key}",
                403: f"check that {key} may use this model",
                404: "check the model name (MAGI_LLM_MODEL, llm.roles) and the base URL (MAGI_LLM_BASE_URL)",
                429: "rate limited; retry later, lower llm.max_concurrency or raise MAGI_LLM_MAX_RETRIES",
            }.get(status, "check the request, the model name and the base URL")
            if status >= 500:
                hint = "the server failed or is overloaded; retry later"
            return LLMError(
                f"LLM request to {where} failed with HTTP {status}: {exc.message}; {hint}",
                status_code=status,
                model=model,
                retryable=_is_retryable(exc),
                retry_after_s=retry_after_s(exc.response.headers, cap_s=RETRY_AFTER_CAP_S),
            )
        if isinstance(exc, openai.APIConnectionError):
            return LLMError(
                f"cannot connect to the LLM server {self.base_url} "
                f"(after {self.llm.max_retries} retries): {exc}; check MAGI_LLM_BASE_URL and that the "
                "server runs",
                model=model,
                retryable=True,
            )
        return LLMError(f"LLM request to {where} failed: {exc}; check the server's logs", model=model)


__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_OUTPUT_NAME",
    "PAUSE_STATUSES",
    "PLACEHOLDER_KEY",
    "REJECTION_STATUSES",
    "RETRY_AFTER_CAP_S",
    "RETRY_STATUSES",
    "OpenAIClient",
    "StructuredMode",
    "wire_messages",
    "wire_tool",
]
