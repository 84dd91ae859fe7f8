"""stream(): native streams (scripted, python async generators, replay/record) and the complete() fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import LLMError
from core.llm import LLMRequest, LLMResponse, Message, StreamEnd, TextDelta, stream
from core.llm.python_provider import PythonClient
from core.llm.replay import RecordingClient, ReplayClient
from core.llm.streaming import StreamEvent, collect
from core.llm.testing import FunctionClient, ScriptedClient, tool_call

REQUEST = LLMRequest(system="s", messages=[Message(role="user", content="hello")])


async def events_of(client: object) -> list[StreamEvent]:
    return [e async for e in stream(client, REQUEST)]  # type: ignore[arg-type]


async def test_scripted_client_streams_text_in_chunks_then_the_response() -> None:
    client = ScriptedClient("MAGI system online", chunk_size=5)
    events = await events_of(client)
    assert events[:-1] == [TextDelta("MAGI "), TextDelta("syste"), TextDelta("m onl"), TextDelta("ine")]
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.response.text == "MAGI system online"
    assert client.requests == [REQUEST]


async def test_a_tool_call_answer_streams_no_text() -> None:
    deltas, response = await collect(stream(ScriptedClient(tool_call("search", {"q": "x"})), REQUEST))
    assert deltas == [] and [c.name for c in response.tool_calls] == ["search"]


async def test_clients_without_stream_fall_back_to_complete() -> None:
    client = FunctionClient(lambda r: f"echo {r.messages[-1].text}")
    events = await events_of(client)
    assert events == [TextDelta("echo hello"), StreamEnd(LLMResponse(text="echo hello", model="function"))]


async def test_errors_surface_from_the_stream() -> None:
    with pytest.raises(LLMError, match="quota"):
        await events_of(ScriptedClient(LLMError("quota exceeded")))


PROVIDER = """
from core.llm.base import LLMResponse, Usage

async def chunky(request):
    for piece in ("価格", "転嫁", "率"):
        yield piece
    yield LLMResponse(usage=Usage(input_tokens=3, output_tokens=3), stop_reason="end_turn")

def plain(request):
    return "one piece"
"""


async def test_python_provider_async_generator_streams_and_completes(tmp_path: Path) -> None:
    (tmp_path / "streamer.py").write_text(PROVIDER, encoding="utf-8")
    client = PythonClient(f"python:{tmp_path / 'streamer.py'}:chunky")
    deltas, response = await collect(client.stream(REQUEST))
    assert deltas == ["価格", "転嫁", "率"]
    assert response.text == "価格転嫁率" and response.usage.output_tokens == 3 and response.stop_reason == "end_turn"
    assert (await client.complete(REQUEST)).text == "価格転嫁率"
    plain = PythonClient(f"python:{tmp_path / 'streamer.py'}:plain")
    assert (await collect(plain.stream(REQUEST)))[0] == ["one piece"]


async def test_recording_a_stream_then_replaying_it(tmp_path: Path) -> None:
    cassette = tmp_path / "s.jsonl"
    recorder = RecordingClient(ScriptedClient("recorded answer", chunk_size=3), cassette)
    deltas, recorded = await collect(stream(recorder, REQUEST))
    assert "".join(deltas) == "recorded answer" and len(deltas) > 1
    replayed = await collect(stream(ReplayClient(cassette), REQUEST))
    assert replayed == (["recorded answer"], recorded)
