"""The LLM layer: one async interface (``LLMClient.complete``), ``generate`` for typed output, providers."""

from core.llm.base import (
    Generated,
    LLMClient,
    LLMRequest,
    LLMResponse,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    UsageMeter,
    generate,
)
from core.llm.factory import make_llm, require_llm

__all__ = [
    "Generated",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "UsageMeter",
    "generate",
    "make_llm",
    "require_llm",
]
