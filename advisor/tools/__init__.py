"""The advisor's six tools and their registry (used by the tool loop, ``magi tool`` and HTTP)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from advisor.tools import chart, cost, document, knowledge, negotiation, web
from advisor.tools.base import AdvisorTool, ToolContext
from core.errors import InputError
from core.llm.tools import Tool

REGISTRY: dict[str, AdvisorTool] = {
    t.name: t
    for t in (
        AdvisorTool(web.NAME, web.DESCRIPTION, web.WebSearchInput, web.WebSearchOutput, web.run),
        AdvisorTool(
            knowledge.NAME, knowledge.DESCRIPTION, knowledge.KnowledgeInput, knowledge.KnowledgeOutput, knowledge.run
        ),
        AdvisorTool(cost.NAME, cost.DESCRIPTION, cost.CostImpactInput, cost.CostImpactOutput, cost.run),
        AdvisorTool(chart.NAME, chart.DESCRIPTION, chart.ChartInput, chart.ChartOutput, chart.run),
        AdvisorTool(document.NAME, document.DESCRIPTION, document.DocumentInput, document.DocumentOutput, document.run),
        AdvisorTool(
            negotiation.NAME,
            negotiation.DESCRIPTION,
            negotiation.NegotiationInput,
            negotiation.NegotiationOutput,
            negotiation.run,
        ),
    )
}


def get_tool(name: str) -> AdvisorTool:
    tool = REGISTRY.get(name)
    if tool is None:
        raise InputError(f"no advisor tool {name!r}; the tools are {', '.join(REGISTRY)}")
    return tool


def validate_input(tool: AdvisorTool, raw: Any) -> BaseModel:
    """The tool's input model from raw JSON; InputError naming every bad field."""
    try:
        return tool.input_model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(input)'}: {e['msg']}" for e in exc.errors())
        raise InputError(f"{tool.name} input: {problems}") from None


async def call_tool(name: str, raw: Any, ctx: ToolContext) -> BaseModel:
    """Validate ``raw`` and run the tool (``magi tool`` and HTTP)."""
    tool = get_tool(name)
    return await tool.run(validate_input(tool, raw), ctx)


def loop_tools() -> list[Tool]:
    """The six tools as the platform's tool-loop specs (schemas from the input models)."""
    return [Tool(t.name, t.description, t.input_model) for t in REGISTRY.values()]


def dump(result: BaseModel) -> dict[str, Any]:
    """JSON-ready output (decimals as strings, exact)."""
    return result.model_dump(mode="json", by_alias=True)


__all__ = ["REGISTRY", "AdvisorTool", "ToolContext", "call_tool", "dump", "get_tool", "loop_tools", "validate_input"]
