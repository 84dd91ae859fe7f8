"""A routing result as Markdown for a person, in the query's language (labels: data/router/messages.yaml).

The JSON keeps the identifiers (``agent``, ``category``, ``requestType``); the Markdown says what they
mean, so no ``BusinessInfoAgent`` or ``None`` reaches a reader.
"""

from __future__ import annotations

from core.messages import Lang, catalogue, format_percent
from router.models import RouteResult


def why(result: RouteResult, lang: Lang) -> str:
    """The rule that decided, in words, with the words of the question it saw (never a pattern)."""
    c = catalogue("router")
    found = result.debug_info.classification
    said = c.text(f"why.{found.rule}", lang)
    if found.matched:
        quoted = (
            "、".join(f"「{w}」" for w in found.matched) if lang == "ja" else ", ".join(f"“{w}”" for w in found.matched)
        )
        said += f"（{quoted}）" if lang == "ja" else f" ({quoted})"
    if found.abstained:
        said += ("。" if lang == "ja" else "; ") + c.text("why.abstained", lang)
    return said


def route_markdown(query: str, result: RouteResult) -> str:
    c = catalogue("router")
    lang: Lang = "en" if result.language == "en" else "ja"
    lines = [
        c.text("route.title", lang, query=query),
        "",
        c.text("route.handled_by", lang, agent=c.text(f"agent.{result.agent}", lang)),
        c.text("route.topic", lang, topic=c.text(f"category.{result.category}", lang)),
    ]
    if result.request_type is None:
        lines.append(c.text("route.asks_nothing", lang))
    else:
        lines.append(c.text("route.asks", lang, request=c.text(f"request.{result.request_type}", lang)))
    lines += [
        c.text("route.language", lang, language=c.text(f"language.{result.language}", lang)),
        c.text("route.confidence", lang, confidence=format_percent(result.confidence, lang)),
        c.text("route.why", lang, reason=why(result, lang)),
    ]
    return "\n".join(lines) + "\n"


__all__ = ["route_markdown", "why"]
