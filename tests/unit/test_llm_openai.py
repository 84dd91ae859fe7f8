"""The OpenAI-compatible adapter against a real ``AsyncOpenAI`` over ``httpx2.MockTransport``: the error
paths a real server cannot be made to produce (429 with retry-after, 5xx, rejected parameters). The
happy paths also run against a real llama.cpp server in tests/integration/test_llm_served_model.py."""

from __future__ import annotations

import json
import pickle
from typing import Any

import httpx2
import pytest

from core.errors import LLMError, LLMNotConfiguredError
from core.llm.base import LLMRequest, Message, TextPart, ToolCallPart, ToolResultPart, ToolSpec
from core.llm.limiter import rate_limit_hook
from core.llm.openai import OpenAIClient
from core.llm.roles import Endpoint
from core.llm.streaming import collect, stream
from core.settings import Settings, load_settings

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
WEATHER = ToolSpec(
    name="weather",
    description="Weather of a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def completion(
    text: str | None = "ok",
    *,
    calls: list[tuple[str, str]] | None = None,
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
) -> httpx2.Response:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(calls)
        ]
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "served-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
    }
    return httpx2.Response(200, json=body)


def error(status: int, msg: str = "nope", headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": msg, "type": "invalid_request_error"}}, headers=headers)


class FakeServer:
    """Plays the planned responses in order (the last one repeats) and keeps every request body."""

    def __init__(self, *actions: httpx2.Response | Exception) -> None:
        self.actions = list(actions)
        self.bodies: list[dict[str, Any]] = []
        self.urls: list[str] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        self.urls.append(str(request.url))
        self.headers.append(dict(request.headers))
        action = self.actions.pop(0) if len(self.actions) > 1 else self.actions[0]
        if isinstance(action, Exception):
            raise action
        return action


def settings(**llm: Any) -> Settings:
    values: dict[str, Any] = {
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "served-model",
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.03,
        "timeout_s": 5.0,
        **llm,
    }
    return load_settings(overrides={"llm": {k: v for k, v in values.items() if v is not None}})


def client_for(server: FakeServer, delays: list[float] | None = None, **llm: Any) -> OpenAIClient:
    async def sleep(seconds: float) -> None:
        (delays if delays is not None else []).append(seconds)

    endpoint_args = {k: llm.pop(k) for k in ("tool_calling", "api_key_env") if k in llm}
    s = settings(**llm)
    endpoint = Endpoint("openai", base_url=s.llm.base_url, **endpoint_args) if endpoint_args else None
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    return OpenAIClient(s.llm, endpoint, http, sleep=sleep, jitter=lambda: 0.0)


def request(**kw: Any) -> LLMRequest:
    return LLMRequest(system="You are terse.", messages=[Message(role="user", content="hello")], **kw)


async def test_plain_call_sends_chat_completion_and_counts_usage() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 6}}
    server = FakeServer(completion("hi there", usage=usage))
    client = client_for(server)
    response = await client.complete(request(temperature=0.2, max_tokens=33))
    assert (response.text, response.model, response.stop_reason) == ("hi there", "served-model", "stop")
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_input_tokens) == (
        4,
        4,
        6,
    )
    body = server.bodies[0]
    assert server.urls == ["http://127.0.0.1:9/v1/chat/completions"]
    assert body["messages"] == [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("served-model", 0.2, 33)
    assert client.usage.calls == 1


async def test_tool_calls_and_results_travel_as_typed_messages() -> None:
    server = FakeServer(completion(None, calls=[("weather", '{"city": "Tokyo"}')], finish="tool_calls"))
    history = [
        Message(role="user", content="weather?"),
        Message(role="assistant", content=[TextPart(text="looking"), ToolCallPart(id="c1", name="weather")]),
        Message(role="user", content=[ToolResultPart(tool_call_id="c1", content="boom", is_error=True)]),
    ]
    response = await client_for(server).complete(
        LLMRequest(system="", messages=history, tools=[WEATHER], tool_choice="required")
    )
    assert response.tool_calls == [ToolCallPart(id="call_0", name="weather", arguments={"city": "Tokyo"})]
    body = server.bodies[0]
    assert body["tool_choice"] == "required"
    assert body["tools"][0]["function"]["parameters"] == WEATHER.input_schema
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "looking",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "error: boom"}


async def test_structured_output_uses_response_format() -> None:
    server = FakeServer(completion('{"answer": "42"}'))
    client = client_for(server)
    response = await client.complete(request(output_schema=SCHEMA, output_name="Answer"))
    assert response.output == {"answer": "42"}
    assert client.structured_mode == "native"
    assert server.bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": SCHEMA},
    }


async def test_rejected_response_format_falls_back_to_forced_function_then_remembers() -> None:
    server = FakeServer(
        error(400, "response_format json_schema is not supported"),
        completion(None, calls=[("Answer", '{"answer": "a"}')]),
        completion(None, calls=[("Answer", '{"answer": "b"}')]),
    )
    client = client_for(server)
    first = await client.complete(request(output_schema=SCHEMA, output_name="Answer"))
    second = await client.complete(request(output_schema=SCHEMA, output_name="Answer"))
    assert [first.output, second.output] == [{"answer": "a"}, {"answer": "b"}]
    assert first.tool_calls == []  # the forced call is the output, not an action
    assert client.structured_mode == "tool" and len(server.bodies) == 3
    assert server.bodies[2]["tool_choice"] == {"type": "function", "function": {"name": "Answer"}}


async def test_a_server_without_either_gets_the_prompt_and_the_repair_path() -> None:
    server = FakeServer(error(400, "response_format unsupported"), error(400, "no tool_choice"), completion("x"))
    client = client_for(server)
    response = await client.complete(request(output_schema=SCHEMA))
    assert response.output is None and response.text == "x"  # generate() validates and asks for a repair
    assert client.structured_mode == "prompt"
    assert "response_format" not in server.bodies[2] and "tools" not in server.bodies[2]


async def test_prompted_tools_describe_the_tools_and_parse_the_json_answer() -> None:
    server = FakeServer(completion('{"tool_calls": [{"name": "weather", "arguments": {"city": "Kyoto"}}]}'))
    client = client_for(server, tool_calling="prompted")
    history = [
        Message(role="user", content="weather?"),
        Message(role="assistant", content=[ToolCallPart(id="c1", name="weather", arguments={"city": "Osaka"})]),
        Message(role="user", content=[ToolResultPart(tool_call_id="c1", content="rain")]),
    ]
    response = await client.complete(
        LLMRequest(system="Be brief.", messages=history, tools=[WEATHER], tool_choice="required")
    )
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("weather", {"city": "Kyoto"})]
    assert response.stop_reason == "tool_calls"
    body = server.bodies[0]
    assert "tools" not in body
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["tool_calls"]  # required: the answer branch is left out
    assert schema["properties"]["tool_calls"]["items"]["anyOf"][0]["properties"]["name"] == {
        "type": "string",
        "enum": ["weather"],
    }
    assert body["messages"][0]["role"] == "system" and "weather" in body["messages"][0]["content"]
    assert body["messages"][2] == {
        "role": "assistant",
        "content": '{"tool_calls": [{"name": "weather", "arguments": {"city": "Osaka"}}]}',
    }
    assert body["messages"][3]["role"] == "user"
    assert '<tool_result name="weather" status="ok">\nrain\n</tool_result>' in body["messages"][3]["content"]


async def test_prompted_map_arguments_travel_as_capped_entry_lists_and_come_back_as_maps() -> None:
    costs = ToolSpec(
        name="costs",
        description="Cost impact.",
        input_schema={
            "type": "object",
            "properties": {"changes": {"type": "object", "additionalProperties": {"type": "number"}}},
            "required": ["changes"],
        },
    )
    written = {"tool_calls": [{"name": "costs", "arguments": {"changes": [{"name": "material", "value": 0.2}]}}]}
    server = FakeServer(completion(json.dumps(written)))
    client = client_for(server, tool_calling="prompted", schema_max_items=3)
    response = await client.complete(request(tools=[costs], tool_choice="required"))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("costs", {"changes": {"material": 0.2}})]
    calls = server.bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["tool_calls"]
    assert calls["maxItems"] == 1  # a forced turn: one call
    changes = calls["items"]["anyOf"][0]["properties"]["arguments"]["properties"]["changes"]
    assert (changes["type"], changes["maxItems"]) == ("array", 3)  # the decoder's cap holds for map entries


async def test_prompted_answer_and_an_answer_cut_by_max_tokens() -> None:
    server = FakeServer(completion('{"answer": "sunny"}'), completion('{"answer": "it is sun', finish="length"))
    client = client_for(server, tool_calling="prompted")
    whole = await client.complete(request(tools=[WEATHER]))
    cut = await client.complete(request(tools=[WEATHER]))
    assert (whole.text, whole.tool_calls) == ("sunny", [])
    assert cut.text == "it is sun"
    assert "anyOf" in server.bodies[0]["response_format"]["json_schema"]["schema"]


async def test_retries_429_with_retry_after_and_reports_the_pause() -> None:
    server = FakeServer(error(429, headers={"retry-after": "2"}), error(503), completion("done"))
    delays: list[float] = []
    reported: list[float] = []
    with rate_limit_hook(reported.append):
        response = await client_for(server, delays).complete(request())
    assert response.text == "done" and len(server.bodies) == 3
    assert delays == pytest.approx([2.0, 0.02])  # retry-after wins, then the doubled backoff
    assert reported == [2.0]


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_errors_are_not_retried_and_carry_fields(status: int) -> None:
    server = FakeServer(error(status, "bad"))
    with pytest.raises(LLMError) as info:
        await client_for(server).complete(request(model="m-x"))
    err = info.value
    assert (err.status_code, err.model, err.retryable) == (status, "m-x", False)
    assert f"HTTP {status}" in str(err) and len(server.bodies) == 1
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.status_code, copy.model) == (status, "m-x")


async def test_429_error_keeps_retry_after_when_retries_run_out() -> None:
    server = FakeServer(error(429, headers={"retry-after": "3"}))
    with pytest.raises(LLMError) as info:
        await client_for(server, max_retries=0).complete(request())
    assert (info.value.status_code, info.value.retryable, info.value.retry_after_s) == (429, True, 3.0)


async def test_connection_errors_name_the_base_url() -> None:
    server = FakeServer(httpx2.ConnectError("refused"))
    with pytest.raises(LLMError, match=r"cannot connect to the LLM server http://127.0.0.1:9/v1.*MAGI_LLM_BASE_URL"):
        await client_for(server, max_retries=1).complete(request())
    assert len(server.bodies) == 2


async def test_rejected_temperature_and_max_tokens_are_adapted_once() -> None:
    server = FakeServer(
        error(400, "Unsupported parameter: 'max_tokens'; use 'max_completion_tokens' instead"),
        error(400, "Unsupported value: 'temperature' does not support 0.0"),
        completion("ok"),
    )
    client = client_for(server)
    await client.complete(request())
    await client.complete(request())
    assert "max_completion_tokens" in server.bodies[2] and "temperature" not in server.bodies[2]
    assert "max_tokens" not in server.bodies[3] and "temperature" not in server.bodies[3]


def sse(*chunks: dict[str, Any]) -> httpx2.Response:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return httpx2.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})


def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "served-model", "choices": choices}
    return {**base, "usage": usage} if usage else base


async def test_streaming_yields_deltas_and_assembles_tool_calls_and_usage() -> None:
    call = {"index": 0, "id": "call_s", "type": "function", "function": {"name": "weather", "arguments": '{"ci'}}
    server = FakeServer(
        sse(
            chunk({"role": "assistant", "content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({"tool_calls": [call]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Nara"}'}}]}),
            chunk({}, finish="tool_calls"),
            chunk({}, usage={"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}),
        )
    )
    deltas, response = await collect(stream(client_for(server), request(tools=[WEATHER])))
    assert deltas == ["Hel", "lo"]
    assert response.text == "Hello" and response.stop_reason == "tool_calls"
    assert response.tool_calls == [ToolCallPart(id="call_s", name="weather", arguments={"city": "Nara"})]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 5)
    assert server.bodies[0]["stream"] is True and server.bodies[0]["stream_options"] == {"include_usage": True}


def test_key_comes_from_the_environment_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    with pytest.raises(LLMNotConfiguredError, match="OPENAI_API_KEY"):
        OpenAIClient(settings(base_url=None).llm)
    config = tmp_path / "with-secret.yaml"
    config.write_text("llm:\n  openai_api_key: sk-in-a-file\n", encoding="utf-8")
    with pytest.raises(Exception, match="secrets are read from the environment only"):
        load_settings(config)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    loaded = load_settings(overrides={"llm": {"provider": "openai"}})
    assert loaded.llm.openai_api_key is not None and loaded.llm.openai_api_key.get_secret_value() == "sk-env"
    monkeypatch.setenv("MY_LOCAL_KEY", "sk-role")
    server = FakeServer(completion())
    client = client_for(server, api_key_env="MY_LOCAL_KEY")
    assert client._key() == "sk-role"


async def test_role_key_variable_is_sent_and_a_missing_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LOCAL_KEY", "sk-role")
    server = FakeServer(completion())
    await client_for(server, api_key_env="MY_LOCAL_KEY").complete(request())
    assert server.headers[0]["authorization"] == "Bearer sk-role"
    monkeypatch.delenv("MY_LOCAL_KEY")
    with pytest.raises(LLMNotConfiguredError, match="MY_LOCAL_KEY, which is not set"):
        client_for(FakeServer(completion()), api_key_env="MY_LOCAL_KEY")


def test_client_pickles_as_settings_and_endpoint() -> None:
    client = OpenAIClient(
        settings().llm, Endpoint("openai", base_url="http://10.0.0.5:8000/v1", tool_calling="prompted")
    )
    copy = pickle.loads(pickle.dumps(client))
    assert (copy.base_url, copy.endpoint.tool_calling) == ("http://10.0.0.5:8000/v1", "prompted")
