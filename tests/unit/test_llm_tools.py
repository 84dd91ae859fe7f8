"""run_tools: the tool loop with the shipped ScriptedClient (history, steps, errors fed back, turn limit)."""

from __future__ import annotations

import pickle

import pytest
from pydantic import BaseModel

from core.llm import Message, TextPart, Tool, ToolCallPart, ToolLoopLimitError, ToolResultPart, run_tools
from core.llm.testing import ScriptedClient, tool_call


class Add(BaseModel):
    a: int
    b: int


ADD = Tool(name="add", description="Add two integers.", args=Add)
USER = [Message(role="user", content="What is 2 + 3, and what is the weather?")]


async def add(args: Add) -> int:
    return args.a + args.b


def weather(args: dict[str, object]) -> dict[str, object]:  # sync: runs in a thread
    return {"city": args["city"], "sky": "clear"}


WEATHER = Tool(name="weather", description="Weather of a city.", input_schema={"type": "object"})
HANDLERS = {"add": add, "weather": weather}


async def test_tools_run_until_the_final_answer() -> None:
    client = ScriptedClient(
        [tool_call("add", {"a": 2, "b": 3}, id="c1"), tool_call("weather", {"city": "Tokyo"}, id="c2")],
        "5, and the sky is clear.",
    )
    tools = [ADD, WEATHER]
    result = await run_tools(client, "Use tools.", USER, tools, HANDLERS, max_turns=4, role="magi.melchior")
    assert result.text == "5, and the sky is clear." and result.turns == 2
    assert [(s.call.name, s.result, s.error) for s in result.steps] == [
        ("add", "5", None),
        ("weather", '{"city": "Tokyo", "sky": "clear"}', None),
    ]
    assert all(s.ok and s.duration_s >= 0 and s.turn == 1 for s in result.steps)
    assert result.usage.input_tokens == 2  # both turns
    first, second = client.requests
    assert [t.name for t in first.tools] == ["add", "weather"] and first.role == "magi.melchior"
    assert first.tools[0].input_schema == Add.model_json_schema()
    # the second turn sees the assistant's calls and the results, in the order asked
    assert second.messages[1] == Message(
        role="assistant",
        content=[
            ToolCallPart(id="c1", name="add", arguments={"a": 2, "b": 3}),
            ToolCallPart(id="c2", name="weather", arguments={"city": "Tokyo"}),
        ],
    )
    assert second.messages[2] == Message(
        role="user",
        content=[
            ToolResultPart(tool_call_id="c1", content="5"),
            ToolResultPart(tool_call_id="c2", content='{"city": "Tokyo", "sky": "clear"}'),
        ],
    )
    assert result.messages[-1] == Message(role="assistant", content="5, and the sky is clear.")
    assert len(result.messages) == 4


async def test_unknown_tool_bad_arguments_and_handler_errors_go_back_to_the_model() -> None:
    def broken(args: dict[str, object]) -> str:
        raise RuntimeError("station offline")

    client = ScriptedClient(
        [
            tool_call("divide", {"a": 1}, id="u"),
            tool_call("add", {"a": "two", "b": 3}, id="v"),
            tool_call("weather", {"city": "Osaka"}, id="w"),
        ],
        "Sorry, I could not compute it.",
    )
    result = await run_tools(client, "s", USER, [ADD, WEATHER], {"add": add, "weather": broken})
    errors = {s.call.id: s.error for s in result.steps}
    assert errors["u"] is not None and "unknown tool 'divide'" in errors["u"] and "add, weather" in errors["u"]
    assert errors["v"] is not None and "arguments of add do not match its schema: a:" in errors["v"]
    assert errors["w"] == "weather failed: RuntimeError: station offline"
    fed_back = client.requests[1].messages[-1].content
    assert isinstance(fed_back, list) and all(isinstance(p, ToolResultPart) and p.is_error for p in fed_back)
    assert result.text == "Sorry, I could not compute it."


async def test_turn_limit_is_a_typed_error_with_the_partial_run() -> None:
    client = ScriptedClient(*[tool_call("add", {"a": 1, "b": 1}) for _ in range(3)], model="claude-loop")
    with pytest.raises(ToolLoopLimitError, match=r"still called tools \(add\) after max_turns=2") as info:
        await run_tools(client, "s", USER, [ADD], HANDLERS, max_turns=2)
    partial = info.value.result
    assert partial is not None and partial.turns == 2 and len(partial.steps) == 1
    assert info.value.model == "claude-loop" and client.remaining == 1
    copy = pickle.loads(pickle.dumps(info.value))
    assert copy.result is not None and copy.result.turns == 2


async def test_answer_without_tool_calls_ends_at_once_and_text_parts_are_kept() -> None:
    client = ScriptedClient("No tools needed.")
    history = [Message(role="user", content=[TextPart(text="Hi")])]
    result = await run_tools(client, "s", history, [ADD], HANDLERS)
    assert result.turns == 1 and result.steps == [] and result.text == "No tools needed."
    assert client.requests[0].messages[0].text == "Hi"
