"""What the model is told about earlier tool results: the latest full result of each tool (its input
and output, structured) so a later turn reuses a cost table instead of recomputing it, within a token
budget; results that do not fit, and older ones, are summarised in one line each. Fenced as data.

Token counts are estimated without a tokenizer: ASCII at ~4 characters per token, other characters
(Japanese) at one token each, which errs on the safe side for Japanese."""

from __future__ import annotations

import json
from typing import Any

from advisor.fencing import as_data
from advisor.labels import percent, tool_label, yen


def estimate_tokens(text: str) -> int:
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def _without_urls(value: Any) -> Any:
    """Storage URLs say nothing to the model (the key names a file) and may name server paths."""
    if isinstance(value, dict):
        return {k: _without_urls(v) for k, v in value.items() if k not in ("url", "document_url", "image_url")}
    if isinstance(value, list):
        return [_without_urls(v) for v in value]
    return value


def summary_of(name: str, out: dict[str, Any]) -> str:
    """One line on a tool's result, in Japanese (the chat page shows it under the tool's label)."""
    if name == "calculate_cost_impact":
        return (
            f"総コスト {yen(out['current_total_cost'])}→{yen(out['new_total_cost'])}"
            f"（{percent(out['cost_increase_rate'], signed=True)}）"
        )
    if name in ("web_search", "search_knowledge_base"):
        return f"{len(out.get('results', []))}件"
    if name == "generate_chart":
        audience = "社内用" if out.get("audience") != "external" else "取引先提出用"
        return f"{out.get('summary', '')}（{audience}）"
    if name == "generate_document":
        audience = "社内用" if out.get("audience") == "internal" else "取引先提出用"
        kind = {"pdf": "PDF", "docx": "Word文書", "xlsx": "Excelファイル"}.get(str(out.get("document_format")), "文書")
        return f"{kind}を作成（{audience}）"
    if name == "simulate_negotiation":
        return f"第{out['round']}ラウンド {out['feedback']['score']}点"
    return "完了"


def tool_context(records: list[dict[str, Any]], budget_tokens: int) -> str:
    """The block for the system prompt ('' when no tool ran yet)."""
    latest: dict[str, dict[str, Any]] = {}
    for item in reversed(records):
        latest.setdefault(str(item.get("tool")), item)
    full: list[str] = []
    short: list[str] = []
    used = 0
    for record in reversed(records):  # newest first: the freshest results get the budget
        name = str(record.get("tool"))
        line = f"- {tool_label(name)}（{name}）: {summary_of(name, record.get('output') or {})}"
        if latest[name] is not record:
            short.append(line + "（以前の結果）")
            continue
        text = json.dumps(
            {
                "tool": name,
                "at": record.get("at"),
                "input": record.get("input"),
                "output": _without_urls(record.get("output")),
            },
            ensure_ascii=False,
        )
        cost = estimate_tokens(text)
        if used + cost <= budget_tokens:
            full.append(text)
            used += cost
        else:
            short.append(line + "（全文は予算超過のため省略。必要なら再実行）")
    if not full and not short:
        return ""
    body = "各ツールの最新の結果（入力と出力、JSON）:\n" + "\n".join(full)
    if short:
        body += "\n要約のみ:\n" + "\n".join(short)
    return as_data("tool-results", body)


__all__ = ["estimate_tokens", "summary_of", "tool_context"]
