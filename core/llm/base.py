"""The one LLM interface every system uses: plain request/response models, a client protocol, ``generate``.

Requests and responses are pydantic models holding only JSON values, so they cross Ray process
boundaries and can be written to cassettes unchanged. Providers differ only in ``complete`` (and,
optionally, ``stream``; see core.llm.streaming).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar, overload, runtime_checkable

from pydantic import BaseModel, Field, ValidationError

from core.errors import LLMOutputError

T = TypeVar("T", bound=BaseModel)


class TextPart(BaseModel):
    """Plain text inside a message."""

    type: Literal["text"] = "text"
    text: str


class ToolCallPart(BaseModel):
    """A tool call the model asked for (an assistant message part)."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResultPart(BaseModel):
    """What a tool returned for one call (a user message part); ``is_error`` marks a failure."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    content: str
    is_error: bool = False


Part = Annotated[TextPart | ToolCallPart | ToolResultPart, Field(discriminator="type")]
ToolCall = ToolCallPart  # the name responses used before parts existed


class Message(BaseModel):
    """One conversation turn: a plain string (one text part) or typed parts (tool calls and results)."""

    role: Literal["user", "assistant"]
    content: str | list[Part]

    @property
    def parts(self) -> list[TextPart | ToolCallPart | ToolResultPart]:
        """The content as parts; a plain string is one text part."""
        if isinstance(self.content, str):
            return [TextPart(text=self.content)]
        return list(self.content)

    @property
    def text(self) -> str:
        """The text parts joined (tool calls and results left out)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class ToolSpec(BaseModel):
    """A tool the model may call; ``input_schema`` is a JSON schema object."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Usage(BaseModel):
    """Token counts of one or more calls; ``+`` sums them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
        )


class LLMRequest(BaseModel):
    """Everything a provider needs for one call; JSON values only (cassette key, Ray transport)."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float | None = None
    output_schema: dict[str, Any] | None = None
    output_name: str | None = None
    model: str | None = None  # None: the role's model, else ``llm.model``
    role: str | None = None  # e.g. "magi.melchior"; resolved by core.llm.roles.resolve_role
    tool_choice: Literal["auto", "required"] | None = None  # None: the model decides ("auto")


class LLMResponse(BaseModel):
    """A provider's answer; ``output`` holds the structured output when a schema was requested."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    output: dict[str, Any] | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    stop_reason: str | None = None
    provider: str = ""  # who answered, e.g. "openai (127.0.0.1:8000)"; set by make_llm's client

    @property
    def parts(self) -> list[TextPart | ToolCallPart | ToolResultPart]:
        """Text and tool calls as message parts, to append the answer to a conversation."""
        parts: list[TextPart | ToolCallPart | ToolResultPart] = [TextPart(text=self.text)] if self.text else []
        return [*parts, *self.tool_calls]

    def as_message(self) -> Message:
        """The answer as an assistant message (plain string when it holds only text)."""
        if not self.tool_calls:
            return Message(role="assistant", content=self.text)
        return Message(role="assistant", content=self.parts)


@runtime_checkable
class LLMClient(Protocol):
    """Anything with an async ``complete``: Anthropic, replay/record, python functions, test doubles."""

    async def complete(self, request: LLMRequest) -> LLMResponse: ...


@dataclass(frozen=True)
class Generated(Generic[T]):
    """Result of :func:`generate`: the last raw response, the validated output, usage of all attempts."""

    response: LLMResponse
    parsed: T | None
    usage: Usage


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def output_from_text(text: str) -> dict[str, Any] | None:
    """A JSON object in ``text`` (optionally fenced), for providers that answer structured calls in text."""
    match = _FENCE.match(text)
    body = match.group(1) if match else text.strip()
    if not body.startswith("{"):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _validate(output_type: type[T], response: LLMResponse) -> tuple[T | None, str, str]:
    """(parsed, errors, shown_output): errors is empty on success."""
    candidate = response.output if response.output is not None else output_from_text(response.text)
    if candidate is None:
        shown = response.text or "(empty answer)"
        return None, "no JSON object matching the schema was returned", shown
    shown = json.dumps(candidate, ensure_ascii=False)
    try:
        return output_type.model_validate(candidate), "", shown
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()]
        return None, "; ".join(problems), shown


def _tool_name(output_type: type[BaseModel]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", output_type.__name__)[:64]
    return name or "emit_output"


@overload
async def generate(
    client: LLMClient,
    *,
    system: str,
    messages: list[Message],
    output_type: type[T],
    tools: list[ToolSpec] | None = None,
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout_s: float | None = None,
    role: str | None = None,
    model: str | None = None,
) -> Generated[T]: ...


@overload
async def generate(
    client: LLMClient,
    *,
    system: str,
    messages: list[Message],
    output_type: None = None,
    tools: list[ToolSpec] | None = None,
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout_s: float | None = None,
    role: str | None = None,
    model: str | None = None,
) -> Generated[BaseModel]: ...


async def generate(
    client: LLMClient,
    *,
    system: str,
    messages: list[Message],
    output_type: type[T] | None = None,
    tools: list[ToolSpec] | None = None,
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout_s: float | None = None,
    role: str | None = None,
    model: str | None = None,
) -> Generated[T]:
    """Call ``client``; with ``output_type``, validate the output and allow the model ONE repair.

    ``role`` (e.g. ``"magi.melchior"``) picks the model and parameters configured for it when the
    client came from ``make_llm``; ``model`` names a model outright.

    The repair turn shows the model its own output and the validation errors, which fixes most
    near-misses (a missing field, a wrong enum) for the price of one extra call.
    """
    request = LLMRequest(
        system=system,
        messages=list(messages),
        tools=list(tools or []),
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
        output_schema=output_type.model_json_schema() if output_type else None,
        output_name=_tool_name(output_type) if output_type else None,
        role=role,
        model=model,
    )
    response = await client.complete(request)
    if output_type is None:
        return Generated(response=response, parsed=None, usage=response.usage)
    usage = response.usage
    parsed, errors, shown = _validate(output_type, response)
    if errors:
        repair = request.model_copy(
            update={
                "messages": [
                    *request.messages,
                    Message(role="assistant", content=shown),
                    Message(
                        role="user",
                        content=(
                            f"Your output does not validate against the {output_type.__name__} schema: {errors}. "
                            "Answer again with the complete corrected output only."
                        ),
                    ),
                ]
            }
        )
        response = await client.complete(repair)
        usage = usage + response.usage
        parsed, errors, _ = _validate(output_type, response)
        if errors:
            raise LLMOutputError(
                f"the LLM output ({response.model or 'unknown model'}) is not a valid {output_type.__name__} "
                f"even after one repair attempt: {errors}"
            )
    return Generated(response=response, parsed=parsed, usage=usage)


__all__ = [
    "Generated",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "Part",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
    "generate",
    "output_from_text",
]
