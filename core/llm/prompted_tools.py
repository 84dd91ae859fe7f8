"""Tool calls for servers whose model has no tool template: the tools go into the prompt, and the model
answers with ONE JSON object (``{"tool_calls": [...]}`` or ``{"answer": ...}``) under the server's
JSON-schema decoding, so its calls are well formed even when the model is small.

The conversation is rewritten for such a server: earlier tool calls become the JSON the model would
have written, and tool results come back as user text inside ``<tool_result>`` blocks, marked as
data. The wording lives in ``data/llm/prompted_tools.md``.

The model decodes under each tool's schema with its maps written as lists of named entries
(``core.llm.schema_maps``), and reads that schema as a short signature (``core.llm.schema_text``:
the JSON schema itself would cost a small model most of its context); the calls it writes get their
maps back before the tool validates them against its own, unchanged schema. A forced turn
(``tool_choice: required``) asks for exactly one call: the least the caller needs, and the most a
small model can close reliably. The requirement, which changes after the first turn, ends the
prompt: the tools' part stays a prefix the server's prompt cache reuses on every turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from core.llm.base import LLMRequest, Message, TextPart, ToolCallPart, ToolResultPart
from core.llm.schema_maps import lists_as_maps, maps_as_lists
from core.llm.schema_text import signature
from core.resources import data_path

ANSWER_KEY = "answer"
CALLS_KEY = "tool_calls"
MAX_CALLS_PER_TURN = 4
_CUT_ANSWER = re.compile(r'^\s*\{\s*"answer"\s*:\s*"(.*)', re.DOTALL)


@cache
def instructions() -> str:
    return data_path("llm", "prompted_tools.md").read_text(encoding="utf-8").strip()


def _hoist(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``$defs``, which move to the root schema (references stay valid there)."""
    own = schema.get("$defs") or {}
    for name, definition in own.items():
        defs.setdefault(name, definition)
    return {k: v for k, v in schema.items() if k != "$defs"}


class PromptedTools:
    """The prompt, messages and response schema of one request with prompted tools, and its parser."""

    def __init__(self, request: LLMRequest) -> None:
        self.request = request
        self.names = [t.name for t in request.tools]
        self.schemas = {t.name: t.input_schema for t in request.tools}  # the tools' own, to restore their maps
        self.decoded = {t.name: maps_as_lists(t.input_schema) for t in request.tools}
        defs: dict[str, Any] = {}
        call_items = [
            {
                "type": "object",
                "properties": {"name": {"type": "string", "enum": [name]}, "arguments": _hoist(schema, defs)},
                "required": ["name", "arguments"],
            }
            for name, schema in self.decoded.items()
        ]
        most = 1 if request.tool_choice == "required" else MAX_CALLS_PER_TURN
        array = {"type": "array", "minItems": 1, "maxItems": most, "items": {"anyOf": call_items}}
        calls = {"type": "object", "properties": {CALLS_KEY: array}, "required": [CALLS_KEY]}
        answer_schema = _hoist(request.output_schema, defs) if request.output_schema else {"type": "string"}
        answer = {"type": "object", "properties": {ANSWER_KEY: answer_schema}, "required": [ANSWER_KEY]}
        root: dict[str, Any] = calls if request.tool_choice == "required" else {"anyOf": [calls, answer]}
        self.schema = {**root, "$defs": defs} if defs else root

    @property
    def system(self) -> str:
        listed = "\n".join(
            f"- {t.name}: {t.description}\n  arguments: {signature(self.decoded[t.name])}" for t in self.request.tools
        )
        requirement = (
            "Call exactly one tool now." if self.request.tool_choice == "required" else "Call a tool when it helps."
        )
        body = instructions().replace("{requirement}", requirement).replace("{tools}", listed)
        return f"{self.request.system}\n\n{body}" if self.request.system else body

    @property
    def messages(self) -> list[Message]:
        """The conversation as plain text turns: calls as the model's JSON, results as marked data."""
        names: dict[str, str] = {}
        out: list[Message] = []
        for message in self.request.messages:
            if isinstance(message.content, str):
                out.append(message)
                continue
            texts = [p.text for p in message.content if isinstance(p, TextPart)]
            calls = [p for p in message.content if isinstance(p, ToolCallPart)]
            results = [p for p in message.content if isinstance(p, ToolResultPart)]
            if calls:
                names.update({c.id: c.name for c in calls})
                payload = {CALLS_KEY: [{"name": c.name, "arguments": c.arguments} for c in calls]}
                out.append(Message(role="assistant", content=json.dumps(payload, ensure_ascii=False)))
                continue
            blocks = [
                f'<tool_result name="{names.get(r.tool_call_id, "?")}" status="{"error" if r.is_error else "ok"}">\n'
                f"{r.content}\n</tool_result>"
                for r in results
            ]
            out.append(Message(role=message.role, content="\n\n".join([*blocks, *texts])))
        return out

    def parse(self, text: str, new_id: Callable[[], str]) -> tuple[list[ToolCallPart], str, dict[str, Any] | None]:
        """(tool calls, answer text, structured output) of the model's JSON; unreadable text stays the answer."""
        try:
            value = json.loads(text)
        except ValueError:
            cut = _CUT_ANSWER.match(text)  # an answer cut off by max_tokens: keep what was said
            return [], cut.group(1) if cut else text, None
        if not isinstance(value, dict):
            return [], text, None
        calls = [
            ToolCallPart(id=new_id(), name=str(c.get("name", "")), arguments=self._arguments(c))
            for c in value.get(CALLS_KEY) or []
            if isinstance(c, dict) and isinstance(c.get("arguments", {}), dict)
        ]
        if calls:
            return calls, "", None
        answer = value.get(ANSWER_KEY, text)
        if self.request.output_schema is not None and isinstance(answer, dict):
            return [], json.dumps(answer, ensure_ascii=False), answer
        return [], answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False), None

    def _arguments(self, call: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments with the maps its tool's schema asks for (the model wrote entry lists)."""
        arguments = call.get("arguments") or {}
        schema = self.schemas.get(str(call.get("name", "")))
        restored: dict[str, Any] = lists_as_maps(arguments, schema) if schema is not None else arguments
        return restored


__all__ = ["ANSWER_KEY", "CALLS_KEY", "MAX_CALLS_PER_TURN", "PromptedTools", "instructions"]
