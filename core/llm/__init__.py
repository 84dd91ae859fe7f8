"""The LLM layer: one async interface (``LLMClient.complete``, ``stream``), ``generate`` for typed
output, ``run_tools`` for tool use, per-role models, a cluster-wide limiter, costs, providers."""

from core.llm.base import (
    Generated,
    LLMClient,
    LLMRequest,
    LLMResponse,
    Message,
    Part,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
    generate,
)
from core.llm.cost import UsageMeter, UsageSummary, call_cost
from core.llm.factory import make_llm, provider_of, require_llm
from core.llm.limiter import LimitedClient
from core.llm.roles import resolve_role
from core.llm.streaming import StreamEnd, StreamEvent, TextDelta, stream
from core.llm.tools import Tool, ToolLoopLimitError, ToolRunResult, ToolStep, run_tools

__all__ = [
    "Generated",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "LimitedClient",
    "Message",
    "Part",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolCallPart",
    "ToolLoopLimitError",
    "ToolResultPart",
    "ToolRunResult",
    "ToolSpec",
    "ToolStep",
    "Usage",
    "UsageMeter",
    "UsageSummary",
    "call_cost",
    "generate",
    "make_llm",
    "provider_of",
    "require_llm",
    "resolve_role",
    "run_tools",
    "stream",
]
