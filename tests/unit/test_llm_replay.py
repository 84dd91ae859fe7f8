"""Cassettes: record through any client, replay identically, explain misses, survive parallel writers."""

from __future__ import annotations

import hashlib
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.errors import CassetteMissError, ConfigError
from core.llm.base import LLMRequest, LLMResponse, Message, ToolCallPart, ToolResultPart
from core.llm.python_provider import PythonClient
from core.llm.replay import RecordingClient, ReplayClient, request_key
from core.llm.testing import ScriptedClient

PROVIDER = """
import itertools
_n = itertools.count()

def answer(request):
    return {"text": f"answer {next(_n)} to " + request.messages[-1].content,
            "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 1},
            "output": {"topic": request.messages[-1].content} if request.output_schema else None}
"""


def request(text: str, **kw: Any) -> LLMRequest:
    return LLMRequest(system="You summarise.", messages=[Message(role="user", content=text)], **kw)


@pytest.fixture
def provider(tmp_path: Path) -> PythonClient:
    (tmp_path / "fake_llm.py").write_text(PROVIDER, encoding="utf-8")
    return PythonClient("python:fake_llm.py:answer")


async def test_record_then_replay_gives_identical_responses(tmp_path: Path, provider: PythonClient) -> None:
    cassette = tmp_path / "cassettes" / "run.jsonl"
    requests = [request("ray"), request("spacy", output_schema={"type": "object"}, output_name="T")]
    recorder = RecordingClient(provider, cassette)

    async def run(client: RecordingClient | ReplayClient) -> list[LLMResponse]:
        return [await client.complete(r) for r in requests]

    recorded = await run(recorder)
    replayed = await run(ReplayClient(cassette))
    assert replayed == recorded
    assert recorded[1].output == {"topic": "spacy"}
    lines = [json.loads(line) for line in cassette.read_text(encoding="utf-8").splitlines()]
    assert [r["key"] for r in lines] == [request_key(r) for r in requests]
    assert lines[0]["request"]["messages"][0]["content"] == "ray"


def test_key_ignores_timeout_but_not_content() -> None:
    assert request_key(request("a")) == request_key(request("a", timeout_s=3.0))
    assert request_key(request("a")) != request_key(request("b"))
    assert request_key(request("a")) != request_key(request("a", temperature=0.5))


async def test_last_record_wins(tmp_path: Path, provider: PythonClient) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingClient(provider, cassette)
    await recorder.complete(request("x"))
    second = await recorder.complete(request("x"))
    assert await ReplayClient(cassette).complete(request("x")) == second


async def test_miss_names_the_request_and_how_to_record(tmp_path: Path, provider: PythonClient) -> None:
    cassette = tmp_path / "c.jsonl"
    await RecordingClient(provider, cassette).complete(request("recorded"))
    missing = request("never recorded question")
    with pytest.raises(CassetteMissError) as info:
        await ReplayClient(cassette).complete(missing)
    text = str(info.value)
    assert request_key(missing) in text
    assert str(cassette) in text
    assert "never recorded question" in text and "You summarise." in text
    assert "MAGI_LLM_PROVIDER=record" in text


async def test_hand_written_json_cassette(tmp_path: Path) -> None:
    req = request("hello")
    cassette = tmp_path / "hand.json"
    record = {"key": request_key(req), "request": req.model_dump(mode="json"), "response": {"text": "hi!"}}
    cassette.write_text(json.dumps([record]), encoding="utf-8")
    assert (await ReplayClient(cassette).complete(req)).text == "hi!"
    with pytest.raises(ConfigError, match=r"use a \.jsonl path"):
        RecordingClient(ReplayClient(cassette), cassette)


async def test_malformed_cassette_is_config_error(tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"malformed"):
        await ReplayClient(cassette).complete(request("x"))


async def test_replay_client_pickles_without_its_cache(tmp_path: Path, provider: PythonClient) -> None:
    cassette = tmp_path / "c.jsonl"
    await RecordingClient(provider, cassette).complete(request("x"))
    client = ReplayClient(cassette)
    await client.complete(request("x"))
    copy = pickle.loads(pickle.dumps(client))
    assert copy._responses is None
    assert (await copy.complete(request("x"))).text.startswith("answer 0")


def test_parallel_processes_append_whole_records(tmp_path: Path) -> None:
    cassette = tmp_path / "shared.jsonl"
    script = (
        "import sys\n"
        "from core.llm.base import LLMRequest, LLMResponse, Message\n"
        "from core.llm.replay import append_record\n"
        "from pathlib import Path\n"
        "for i in range(40):\n"
        "    req = LLMRequest(system='s', messages=[Message(role='user', content=f'{sys.argv[1]}-{i}')])\n"
        "    append_record(Path(sys.argv[2]), req, LLMResponse(text='x' * 20000))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", script, f"w{n}", str(cassette)], env=env) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    lines = cassette.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 160
    assert all(len(json.loads(line)["response"]["text"]) == 20000 for line in lines)


def test_plain_text_keys_did_not_change_with_roles_and_parts() -> None:
    """The key of a plain-text request is the hash of exactly the fields requests had before roles/parts."""
    plain = request("ray", temperature=0.2)
    before = {
        "system": "You summarise.",
        "messages": [{"role": "user", "content": "ray"}],
        "tools": [],
        "temperature": 0.2,
        "max_tokens": 1024,
        "output_schema": None,
        "output_name": None,
    }
    canonical = json.dumps(before, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]
    assert request_key(plain) == expected
    assert request_key(plain.model_copy(update={"role": "research.summary"})) == expected
    assert request_key(plain.model_copy(update={"model": "claude-sonnet-4-6"}), "claude-sonnet-4-6") == expected
    assert request_key(plain.model_copy(update={"model": "claude-opus-4-6"}), "claude-sonnet-4-6") != expected


async def test_tool_calls_and_results_round_trip_through_a_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "tools.jsonl"
    history = [
        Message(role="user", content="add 2 and 3"),
        Message(role="assistant", content=[ToolCallPart(id="c1", name="add", arguments={"a": 2, "b": 3})]),
        Message(role="user", content=[ToolResultPart(tool_call_id="c1", content="5")]),
    ]
    asked = LLMRequest(system="s", messages=history)
    scripted = ScriptedClient(LLMResponse(text="5", tool_calls=[ToolCallPart(id="c2", name="note", arguments={})]))
    recorded = await RecordingClient(scripted, cassette).complete(asked)
    replayed = await ReplayClient(cassette).complete(asked)
    assert replayed == recorded and replayed.tool_calls[0].name == "note"
    stored = json.loads(cassette.read_text(encoding="utf-8"))["request"]["messages"]
    assert stored[1]["content"][0] == {"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}
    assert request_key(asked) != request_key(LLMRequest(system="s", messages=history[:1]))
