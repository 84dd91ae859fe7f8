"""``generate``: schema in the request, validation, one repair turn, ``LLMOutputError``; ``UsageMeter``."""

from __future__ import annotations

import json
import pickle
import threading
from typing import Any, Literal

import httpx2
import pytest
from pydantic import BaseModel

from core.errors import LLMOutputError
from core.llm import Generated, LLMRequest, LLMResponse, Message, Usage, UsageMeter, generate
from core.llm.anthropic import AnthropicClient
from core.llm.testing import ScriptedClient as Scripted
from core.settings import load_settings


class Verdict(BaseModel):
    label: Literal["yes", "no"]
    confidence: float


def out(output: dict[str, Any] | None, text: str = "", tokens: int = 10) -> LLMResponse:
    return LLMResponse(text=text, output=output, usage=Usage(input_tokens=tokens, output_tokens=1), model="m")


USER = [Message(role="user", content="Is the sky blue?")]


async def run(client: Scripted | AnthropicClient, **kw: Any) -> Generated[Verdict]:
    return await generate(client, system="Judge.", messages=USER, output_type=Verdict, **kw)


async def test_valid_output_is_parsed_and_schema_sent() -> None:
    client = Scripted(out({"label": "yes", "confidence": 0.9}))
    result = await run(client, max_tokens=50, timeout_s=3.0)
    assert result.parsed == Verdict(label="yes", confidence=0.9)
    sent = client.requests[0]
    assert sent.output_schema == Verdict.model_json_schema()
    assert sent.output_name == "Verdict"
    assert (sent.max_tokens, sent.timeout_s) == (50, 3.0)


async def test_invalid_output_is_repaired_once() -> None:
    client = Scripted(out({"label": "maybe"}, tokens=10), out({"label": "no", "confidence": 0.2}, tokens=20))
    result = await run(client)
    assert result.parsed == Verdict(label="no", confidence=0.2)
    assert len(client.requests) == 2
    repair = client.requests[1].messages
    assert repair[:1] == USER
    assert repair[1].role == "assistant" and json.loads(repair[1].content) == {"label": "maybe"}
    assert repair[2].role == "user"
    assert "Verdict" in repair[2].content and "label" in repair[2].content and "confidence" in repair[2].content
    assert result.usage.input_tokens == 30  # both attempts


async def test_still_invalid_after_repair_raises_output_error() -> None:
    client = Scripted(out({"label": "maybe"}), out({"label": "perhaps", "confidence": "high"}))
    with pytest.raises(LLMOutputError, match=r"not a valid Verdict even after one repair attempt: label: .*"):
        await run(client)
    assert len(client.requests) == 2


async def test_json_in_text_is_accepted_when_output_is_missing() -> None:
    client = Scripted(out(None, text='```json\n{"label": "no", "confidence": 1}\n```'))
    assert (await run(client)).parsed == Verdict(label="no", confidence=1.0)


async def test_no_output_at_all_gets_the_repair_turn() -> None:
    client = Scripted(out(None, text="I think yes."), out({"label": "yes", "confidence": 0.5}))
    assert (await run(client)).parsed == Verdict(label="yes", confidence=0.5)
    assert client.requests[1].messages[1].content == "I think yes."


async def test_plain_text_generation() -> None:
    client = Scripted(out(None, text="Blue."))
    result = await generate(client, system="s", messages=USER)
    assert (result.parsed, result.response.text) == (None, "Blue.")
    assert client.requests[0].output_schema is None


def _anthropic(*bodies: dict[str, Any]) -> tuple[AnthropicClient, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    queue = list(bodies)

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json=queue.pop(0))

    settings = load_settings(overrides={"anthropic_api_key": "k", "llm": {"model": "claude-test"}})
    client = AnthropicClient(settings.llm, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))
    return client, seen


def _message(text: str) -> dict[str, Any]:
    return {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 4, "output_tokens": 2},
    }


async def test_repair_over_the_anthropic_adapter() -> None:
    client, seen = _anthropic(_message('{"label": "yes"}'), _message('{"label": "yes", "confidence": 0.7}'))
    result = await run(client)
    assert result.parsed == Verdict(label="yes", confidence=0.7)
    assert len(seen) == 2 and all("output_config" in body for body in seen)
    assert client.usage.total == Usage(input_tokens=8, output_tokens=4)


async def test_output_error_over_the_anthropic_adapter() -> None:
    client, _ = _anthropic(_message('{"label": "yes"}'), _message('{"label": "yes"}'))
    with pytest.raises(LLMOutputError, match=r"Verdict.*confidence: Field required"):
        await run(client)


def test_usage_meter_sums_across_threads_and_pickles() -> None:
    meter = UsageMeter()
    one = Usage(input_tokens=1, output_tokens=2, cache_creation_input_tokens=3, cache_read_input_tokens=4)

    def work() -> None:
        for _ in range(500):
            meter.add(one)
        meter.add(LLMResponse(usage=one))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.calls == 8 * 501
    assert meter.total == Usage(
        input_tokens=4008, output_tokens=8016, cache_creation_input_tokens=12024, cache_read_input_tokens=16032
    )
    copy = pickle.loads(pickle.dumps(meter))
    copy.add(one)
    assert copy.calls == meter.calls + 1


def test_request_is_plain_json() -> None:
    request = LLMRequest(system="s", messages=USER, output_schema=Verdict.model_json_schema())
    assert LLMRequest.model_validate(json.loads(request.model_dump_json())) == request
