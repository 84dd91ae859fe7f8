"""The Anthropic adapter against a real ``AsyncAnthropic`` over ``httpx2.MockTransport`` (no network)."""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from core.errors import LLMError, LLMNotConfiguredError
from core.llm.anthropic import CACHE_MIN_SYSTEM_CHARS, AnthropicClient
from core.llm.base import LLMRequest, Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec, Usage
from core.llm.limiter import rate_limit_hook
from core.llm.streaming import TextDelta, collect, stream
from core.settings import Settings, load_settings

Action = httpx2.Response | Exception | Callable[[httpx2.Request], Any]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def message(
    *, text: str | None = "ok", tool: tuple[str, dict[str, Any]] | None = None, usage: dict[str, int] | None = None
) -> httpx2.Response:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool is not None:
        content.append({"type": "tool_use", "id": "toolu_1", "name": tool[0], "input": tool[1]})
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }
    return httpx2.Response(200, json=body)


def error(status: int, msg: str = "nope", headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {"type": "error", "error": {"type": "api_error", "message": msg}}
    return httpx2.Response(status, json=body, headers=headers)


class FakeServer:
    """Plays the planned actions in order and keeps every request body."""

    def __init__(self, *actions: Action) -> None:
        self.actions = list(actions)
        self.bodies: list[dict[str, Any]] = []
        self.urls: list[str] = []

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        self.urls.append(str(request.url))
        action = self.actions.pop(0) if len(self.actions) > 1 else self.actions[0]
        if isinstance(action, Exception):
            raise action
        if isinstance(action, httpx2.Response):
            return action
        result = action(request)
        response = await result if asyncio.iscoroutine(result) else result
        assert isinstance(response, httpx2.Response)
        return response


def settings(**llm: Any) -> Settings:
    """Settings whose ``llm`` section has test values, then ``llm`` (a None value removes the key)."""
    values: dict[str, Any] = {
        "anthropic_api_key": "test-key",
        "model": "claude-test",
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.03,
        "timeout_s": 5.0,
    }
    values.update(llm)
    return load_settings(overrides={"llm": {k: v for k, v in values.items() if v is not None}})


def make_client(server: FakeServer, delays: list[float], *, jitter: float = 0.0, **overrides: Any) -> AnthropicClient:
    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    transport = httpx2.MockTransport(server)
    return AnthropicClient(
        settings(**overrides).llm,
        http_client=httpx2.AsyncClient(transport=transport),
        sleep=sleep,
        jitter=lambda: jitter,
    )


def request(system: str = "You are terse.", **kw: Any) -> LLMRequest:
    return LLMRequest(system=system, messages=[Message(role="user", content="hello")], **kw)


async def test_retries_429_then_529_then_success_with_configured_backoff() -> None:
    server = FakeServer(error(429), error(529), message(text="done"))
    delays: list[float] = []
    client = make_client(server, delays)
    response = await client.complete(request())
    assert response.text == "done"
    assert len(server.bodies) == 3
    assert delays == pytest.approx([0.01, 0.02])  # initial, then doubled
    assert client.usage.calls == 1


def test_backoff_is_capped_and_jittered() -> None:
    client = make_client(FakeServer(message()), [], jitter=1.0, backoff_initial_s=1.0, backoff_max_s=10.0)
    assert [client.retry_delay(n) for n in range(6)] == pytest.approx([0.75, 1.5, 3.0, 6.0, 7.5, 7.5])
    client._jitter = lambda: 0.0
    assert [client.retry_delay(n) for n in range(6)] == pytest.approx([1, 2, 4, 8, 10, 10])


@pytest.mark.parametrize(("headers", "expected"), [({"retry-after-ms": "250"}, 0.25), ({"retry-after": "2"}, 2.0)])
async def test_retry_after_headers_are_honoured(headers: dict[str, str], expected: float) -> None:
    server = FakeServer(error(429, headers=headers), message())
    delays: list[float] = []
    await make_client(server, delays).complete(request())
    assert delays == [expected]


async def test_no_retry_on_400() -> None:
    server = FakeServer(error(400, "messages: field required"))
    delays: list[float] = []
    with pytest.raises(LLMError, match=r"HTTP 400: .*messages: field required"):
        await make_client(server, delays).complete(request())
    assert len(server.bodies) == 1
    assert delays == []


@pytest.mark.parametrize("status", [403, 404, 422])
async def test_no_retry_on_client_errors(status: int) -> None:
    server = FakeServer(error(status), message())
    with pytest.raises(LLMError, match=f"HTTP {status}"):
        await make_client(server, []).complete(request())
    assert len(server.bodies) == 1


@pytest.mark.parametrize("status", [408, 409, 500, 503])
async def test_retry_on_transient_statuses(status: int) -> None:
    server = FakeServer(error(status), message(text="fine"))
    assert (await make_client(server, []).complete(request())).text == "fine"
    assert len(server.bodies) == 2


async def test_401_names_the_key() -> None:
    server = FakeServer(error(401, "invalid x-api-key"))
    with pytest.raises(LLMError, match=r"HTTP 401.*ANTHROPIC_API_KEY"):
        await make_client(server, []).complete(request())
    assert len(server.bodies) == 1


async def test_x_should_retry_false_is_obeyed() -> None:
    server = FakeServer(error(500, headers={"x-should-retry": "false"}), message())
    with pytest.raises(LLMError, match=r"HTTP 500"):
        await make_client(server, []).complete(request())
    assert len(server.bodies) == 1


async def test_read_timeout_becomes_llm_error_after_retries() -> None:
    server = FakeServer(httpx2.ReadTimeout("slow"))
    delays: list[float] = []
    with pytest.raises(LLMError, match=r"timed out after 5 s"):
        await make_client(server, delays).complete(request())
    assert len(server.bodies) == 3  # first attempt + max_retries=2
    assert len(delays) == 2


async def test_wall_clock_timeout_per_request() -> None:
    async def slow(_request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(2)
        return message()

    server = FakeServer(slow)
    with pytest.raises(LLMError, match=r"timed out after 0\.05 s"):
        await make_client(server, [], max_retries=0).complete(request(timeout_s=0.05))


async def test_connection_error_is_retried_then_explained() -> None:
    server = FakeServer(httpx2.ConnectError("refused"))
    with pytest.raises(LLMError, match=r"cannot connect to the LLM server .*ANTHROPIC_BASE_URL"):
        await make_client(server, [], max_retries=1).complete(request())
    assert len(server.bodies) == 2


async def test_base_url_without_key_targets_compatible_server() -> None:
    server = FakeServer(message())
    client = make_client(server, [], anthropic_api_key=None, anthropic_base_url="http://localhost:8080")
    await client.complete(request())
    assert server.urls == ["http://localhost:8080/v1/messages"]


def test_missing_key_and_base_url_is_not_configured() -> None:
    with pytest.raises(LLMNotConfiguredError, match=r"ANTHROPIC_API_KEY.*ANTHROPIC_BASE_URL"):
        AnthropicClient(load_settings().llm)


async def test_native_structured_output() -> None:
    server = FakeServer(message(text='{"answer": "42"}'))
    client = make_client(server, [])
    response = await client.complete(request(output_schema=SCHEMA, output_name="Answer"))
    assert response.output == {"answer": "42"}
    assert client.structured_mode == "native"
    fmt = server.bodies[0]["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["properties"] == SCHEMA["properties"]


async def test_rejected_parse_falls_back_to_forced_tool_and_remembers() -> None:
    server = FakeServer(
        error(400, "output_config: Extra inputs are not permitted"),
        message(text=None, tool=("Answer", {"answer": "a"})),
        message(text=None, tool=("Answer", {"answer": "b"})),
    )
    client = make_client(server, [])

    async def run() -> list[dict[str, Any] | None]:
        first = await client.complete(request(output_schema=SCHEMA, output_name="Answer"))
        second = await client.complete(request(output_schema=SCHEMA, output_name="Answer"))
        return [first.output, second.output]

    assert await run() == [{"answer": "a"}, {"answer": "b"}]
    assert len(server.bodies) == 3  # the native path is not tried again
    assert client.structured_mode == "tool"
    assert "output_config" in server.bodies[0]
    for body in server.bodies[1:]:
        assert "output_config" not in body
        assert body["tool_choice"] == {"type": "tool", "name": "Answer"}
        assert body["tools"][-1]["input_schema"] == SCHEMA


async def test_ignored_output_config_falls_back_to_forced_tool() -> None:
    server = FakeServer(
        message(text="Sure! The answer is 42."), message(text=None, tool=("emit_output", {"answer": "42"}))
    )
    client = make_client(server, [])
    response = await client.complete(request(output_schema=SCHEMA))
    assert response.output == {"answer": "42"}
    assert response.tool_calls == []  # the forced call is the output, not an action
    assert client.structured_mode == "tool"


async def test_long_system_prompt_is_sent_as_cached_block() -> None:
    server = FakeServer(message())
    client = make_client(server, [])
    long_system = "x" * CACHE_MIN_SYSTEM_CHARS
    await client.complete(request(system=long_system))
    await client.complete(request(system="short"))
    assert server.bodies[0]["system"] == [{"type": "text", "text": long_system, "cache_control": {"type": "ephemeral"}}]
    assert server.bodies[1]["system"] == "short"


async def test_usage_is_recorded_and_summed() -> None:
    usage = {"input_tokens": 7, "output_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50}
    server = FakeServer(message(usage=usage))
    client = make_client(server, [])

    async def run() -> None:
        for _ in range(3):
            response = await client.complete(request())
            assert response.usage == Usage(**usage)

    await run()
    assert client.usage.calls == 3
    assert client.usage.total == Usage(
        input_tokens=21, output_tokens=9, cache_creation_input_tokens=300, cache_read_input_tokens=150
    )


async def test_tool_calls_and_temperature_are_passed() -> None:
    server = FakeServer(message(text="calling", tool=("search", {"q": "ray"})))
    client = make_client(server, [])
    spec = ToolSpec(name="search", description="Search.", input_schema={"type": "object"})
    response = await client.complete(request(tools=[spec], temperature=0.3))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("search", {"q": "ray"})]
    assert server.bodies[0]["temperature"] == 0.3
    assert server.bodies[0]["tools"] == [spec.model_dump()]


async def test_rejected_temperature_is_dropped_and_remembered() -> None:
    server = FakeServer(error(400, "`temperature` is deprecated for this model"), message())
    client = make_client(server, [])
    await client.complete(request())
    await client.complete(request())
    assert "temperature" in server.bodies[0]
    assert all("temperature" not in body for body in server.bodies[1:])
    assert len(server.bodies) == 3


def test_client_pickles_as_its_settings() -> None:
    client = AnthropicClient(settings().llm)
    copy = pickle.loads(pickle.dumps(client))
    assert isinstance(copy, AnthropicClient)
    assert copy.llm == client.llm


# --- typed parts, per-request model, typed errors, rate-limit reports, streaming ------------------------------


async def test_tool_calls_and_results_travel_as_blocks() -> None:
    server = FakeServer(message(text="done"))
    history = [
        Message(role="user", content="find ray"),
        Message(
            role="assistant",
            content=[TextPart(text="searching"), ToolCallPart(id="toolu_1", name="search", arguments={"q": "ray"})],
        ),
        Message(role="user", content=[ToolResultPart(tool_call_id="toolu_1", content="boom", is_error=True)]),
    ]
    await make_client(server, []).complete(LLMRequest(system="s", messages=history, model="claude-other"))
    body = server.bodies[0]
    assert body["model"] == "claude-other"  # the request's model wins over llm_model
    assert body["messages"] == [
        {"role": "user", "content": "find ray"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "searching"},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "ray"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True}],
        },
    ]


async def test_tool_use_comes_back_as_a_part_and_continues_the_conversation() -> None:
    server = FakeServer(message(text="look", tool=("search", {"q": "x"})))
    response = await make_client(server, []).complete(request())
    assert response.tool_calls == [ToolCallPart(id="toolu_1", name="search", arguments={"q": "x"})]
    assert response.as_message().parts == [TextPart(text="look"), *response.tool_calls]


async def test_errors_are_typed_and_survive_pickling() -> None:
    server = FakeServer(error(429, "slow down", headers={"retry-after": "3"}))
    with pytest.raises(LLMError) as info:
        await make_client(server, [], max_retries=0).complete(request(model="claude-x"))
    err = info.value
    assert (err.status_code, err.model, err.retryable, err.retry_after_s) == (429, "claude-x", True, 3.0)
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is LLMError and str(copy) == str(err)
    assert (copy.status_code, copy.model, copy.retryable, copy.retry_after_s) == (429, "claude-x", True, 3.0)
    with pytest.raises(LLMError) as info:
        await make_client(FakeServer(error(404)), []).complete(request())
    assert (info.value.status_code, info.value.retryable, info.value.model) == (404, False, "claude-test")


async def test_429_with_retry_after_is_reported_to_the_limiter() -> None:
    server = FakeServer(error(529, headers={"retry-after": "2"}), error(500), message())
    reported: list[float] = []
    with rate_limit_hook(reported.append):
        await make_client(server, []).complete(request())
    assert reported == [2.0]  # the 529 with retry-after; the plain 500 pauses nobody


def sse(*events: dict[str, Any]) -> httpx2.Response:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})


def streamed(*deltas: str, tool: tuple[str, str] | None = None) -> httpx2.Response:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_s",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 1},
        },
    }
    events: list[dict[str, Any]] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}} for d in deltas]
    events.append({"type": "content_block_stop", "index": 0})
    if tool is not None:
        events += [
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_9", "name": tool[0], "input": {}},
            },
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": tool[1]}},
            {"type": "content_block_stop", "index": 1},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
    ]
    return sse(*events)


async def test_stream_yields_text_deltas_then_the_full_response() -> None:
    server = FakeServer(error(529), streamed("こん", "にち", "は", tool=("search", '{"q": "ray"}')))
    client = make_client(server, [])
    deltas, response = await collect(stream(client, request(model="claude-s")))
    assert deltas == ["こん", "にち", "は"]
    assert response.text == "こんにちは" and response.stop_reason == "tool_use"
    assert response.tool_calls == [ToolCallPart(id="toolu_9", name="search", arguments={"q": "ray"})]
    assert response.usage.input_tokens == 12 and response.usage.output_tokens == 7
    assert len(server.bodies) == 2 and server.bodies[1]["stream"] is True  # the 529 before any event was retried
    assert server.bodies[1]["model"] == "claude-s"
    assert client.usage.calls == 1


async def test_stream_error_is_an_llm_error() -> None:
    server = FakeServer(error(401, "invalid x-api-key"))
    with pytest.raises(LLMError, match=r"HTTP 401.*ANTHROPIC_API_KEY"):
        await collect(stream(make_client(server, []), request()))


async def test_a_stream_that_breaks_off_is_a_retryable_llm_error() -> None:
    class Broken(httpx2.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def]
            yield streamed("part").content[:400]  # message_start and the first delta, then the connection drops
            raise httpx2.ReadError("connection reset")

    server = FakeServer(lambda _r: httpx2.Response(200, stream=Broken(), headers={"content-type": "text/event-stream"}))
    seen: list[str] = []

    async def run() -> None:
        async for event in stream(make_client(server, []), request()):
            if isinstance(event, TextDelta):
                seen.append(event.text)

    with pytest.raises(LLMError, match=r"broke off after \d text deltas.*ReadError") as info:
        await run()
    assert info.value.retryable and len(server.bodies) == 1
