"""Test model of the advisor (a scripted LLM shipped with the package, never a real one).

Configure it as ``MAGI_LLM_PROVIDER=python:advisor.scripted:respond``.

Deterministic and offline, for tests and demos: it answers every prompt the advisor sends (mode
classification, Mode 1, Mode 2 with tool calls, summaries, the negotiation opponent and coach) with
valid output, and says that it is scripted. In Mode 2 it drives the tool loop like a model would:
it picks tools from the words of the user's message (試算 -> calculate_cost_impact, グラフ ->
generate_chart, 申入書 -> generate_document, 法/買いたたき -> search_knowledge_base, 調べ ->
web_search, 練習 -> simulate_negotiation), calls the independent ones together, then the ones that
use their results (a chart of the computed scenarios, a letter as PDF and Word that tries to attach
that chart), reads a refused call's error and tries once more without what was refused (as a model
should), then answers from the results. Its cost figures are the spec's example structure, labelled
as an example. It tells the advisor's calls apart by their role (the prompts carry no tag).

It is also deliberately gullible in one way, so tests can show the fences work: an instruction to
ignore previous instructions that reaches it OUTSIDE a data fence is obeyed (it searches for what
the instruction says); the same text inside a fence is read as data, like any other result.
``MAGI_ADVISOR_SCRIPTED_LATENCY_S`` adds a fixed delay per call (benchmarks).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

from advisor.fencing import outside_fences
from advisor.labels import percent, tool_label, yen
from core.llm.base import LLMRequest, Message, TextPart, ToolCallPart, ToolResultPart

LATENCY_ENV = "MAGI_ADVISOR_SCRIPTED_LATENCY_S"
ROLES = ("advisor.",)  # the LLM roles it answers (core.llm.factory refuses it for others)
MARK = "（スクリプト応答）"
PRICE_WORDS = (
    "取引先",
    "交渉",
    "原価",
    "コスト",
    "価格",
    "発注",
    "仕入",
    "利益",
    "賃上げ",
    "最低賃金",
    "申入",
    "値段",
    "納品",
)
GENERAL_WORDS = ("資金繰り", "採用", "人材", "事業承継", "販路", "融資", "眠れ", "不安", "補助金", "後継")
EXAMPLE_COSTS: dict[str, Any] = {
    "current_cost_structure": {
        "material_cost": {"ratio": 0.40, "amount": 1000000},
        "labor_cost": {"ratio": 0.35, "amount": 875000},
        "energy_cost": {"ratio": 0.10, "amount": 250000},
        "overhead": {"ratio": 0.15, "amount": 375000},
    },
    "price_changes": {"material_cost": 0.20, "labor_cost": 0.05, "energy_cost": 0.30},
    "target_profit_margin": 0.08,
    "export_xlsx": True,
}
PHASES = (
    ("web_search", "search_knowledge_base", "calculate_cost_impact", "simulate_negotiation"),
    ("generate_chart",),
    ("generate_document",),
)
INJECTION_MARKS = ("ignore previous instructions", "以前の指示を無視", "これまでの指示を無視")
DOCUMENT_FORMATS = ("pdf", "docx")


def _structured(value: dict[str, Any]) -> dict[str, Any]:
    return {"text": json.dumps(value, ensure_ascii=False), "output": value}


def _last_user_text(messages: list[Message]) -> tuple[int, str]:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and any(isinstance(p, TextPart) for p in m.parts):
            return i, m.text
    return -1, ""


def classify(request: LLMRequest) -> dict[str, Any]:
    content = request.messages[-1].text
    latest = content.rsplit("最新のユーザー発言:", 1)[-1]
    earlier = content.rsplit("最新のユーザー発言:", 1)[0]
    if any(w in latest for w in GENERAL_WORDS):
        confidence, reason = 0.1, "経営全般の相談"
    elif any(w in latest for w in PRICE_WORDS):
        confidence, reason = 0.9, "取引・価格に関する語がある"
    elif any(w in earlier for w in PRICE_WORDS):
        confidence, reason = 0.8, "直近の会話が価格交渉の文脈"
    else:
        confidence, reason = 0.2, "価格転嫁との関連は薄い"
    return _structured({"mode2_confidence": confidence, "reason": reason})


def summarise(request: LLMRequest) -> str:
    lines = [line for line in request.messages[-1].text.splitlines() if line.startswith(("ユーザー:", "記録:"))]
    return MARK + "要約: " + " / ".join(line.split(":", 1)[1].strip()[:30] for line in lines[-12:])


def opponent(request: LLMRequest) -> dict[str, Any]:
    rounds = sum(1 for m in request.messages if m.role == "user")
    said = request.messages[-1].text
    agrees = "合意" in said or ("%" in said and rounds >= 3)
    if "高圧的" in request.system:
        reply = "そんな値上げは受け入れられません。他社に切り替えることも検討しますよ。"
    elif "論理武装" in request.system:
        reply = "その上昇率の根拠となる公表資料と、費目別の内訳を示していただけますか。"
    elif "協調的" in request.system:
        reply = "事情はよく分かりました。段階的な改定なら社内で相談できそうです。"
    else:
        reply = "当社もコスト削減目標があります。改定幅を半分にできませんか。"
    if agrees:
        reply = "分かりました。ご提示の内容で社内稟議にかけます。"
    return _structured({"response": MARK + reply, "agrees": agrees})


def coach(request: LLMRequest) -> dict[str, Any]:
    text = request.messages[-1].text
    said = text.split("受注者の発言:", 1)[-1].split("相手の返答:", 1)[0]
    numbers = len(re.findall(r"\d+(?:\.\d+)?\s*[%％円]", said))
    evidence_words = sum(w in said for w in ("指針", "最低賃金", "物価指数", "春闘", "公表", "調査", "取適法"))
    logic = min(95, 45 + 15 * numbers + (10 if "ため" in said or "根拠" in said else 0))
    evidence = min(95, 30 + 20 * evidence_words + 10 * numbers)
    tone = 80 if any(w in said for w in ("お願い", "ご理解", "ご相談", "ございます")) else 60
    if "!" in said or "！" in said:
        tone -= 20
    strengths = [
        s
        for s, ok in (
            ("数値を示している", numbers > 0),
            ("公表資料に触れている", evidence_words > 0),
            ("丁寧な言葉遣い", tone >= 80),
        )
        if ok
    ]
    improvements = [
        s
        for s, ok in (
            ("具体的な金額や率を示しましょう", numbers == 0),
            ("公表資料（最低賃金、企業物価指数など）を根拠にしましょう", evidence_words == 0),
            ("相手の事情にも触れつつ丁寧に", tone < 80),
        )
        if ok
    ]
    return _structured(
        {
            "logic_score": logic,
            "tone_score": tone,
            "evidence_usage_score": evidence,
            "strengths": strengths or ["要請の意思を伝えられている"],
            "improvements": improvements or ["次は代替案（段階的な改定など）も用意しましょう"],
            "next_suggestion": "費目別の上昇額と、その根拠となる公表資料を示しましょう"
            if numbers == 0
            else "相手の懸念を確認し、段階的な改定案も提示しましょう",
        }
    )


def _wanted(text: str) -> list[str]:
    rules = (
        ("calculate_cost_impact", ("試算", "いくら", "計算", "松竹梅")),
        ("generate_chart", ("グラフ", "チャート", "図")),
        ("generate_document", ("申入書", "文書", "見積書", "交渉資料", "合意書")),
        ("search_knowledge_base", ("法", "買いたたき", "違反", "指針", "宣言")),
        ("web_search", ("調べ", "検索", "動向", "ニュース")),
        ("simulate_negotiation", ("練習", "ロールプレイ", "リハーサル")),
    )
    return [name for name, words in rules if any(w in text for w in words)]


def _parse(content: str) -> dict[str, Any]:
    """A tool result as the advisor sends it: JSON inside a data fence."""
    body = content.split("\n", 1)[1].rsplit("\n", 1)[0] if content.startswith("<<<DATA") else content
    try:
        value = json.loads(body)
    except ValueError:
        return {"error": content}
    return value if isinstance(value, dict) else {"error": content}


def _all_results(messages: list[Message], start: int) -> dict[str, list[dict[str, Any]]]:
    names: dict[str, str] = {}
    found: dict[str, list[dict[str, Any]]] = {}
    for m in messages[start + 1 :]:
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                names[p.id] = p.name
            elif isinstance(p, ToolResultPart):
                name = names.get(p.tool_call_id, "")
                found.setdefault(name, []).append({"error": p.content} if p.is_error else _parse(p.content))
    return found


def _results(messages: list[Message], start: int) -> dict[str, dict[str, Any]]:
    """The last result of each tool since the user's message (a success wins over an earlier error)."""
    found: dict[str, dict[str, Any]] = {}
    for name, outs in _all_results(messages, start).items():
        ok = [o for o in outs if "error" not in o]
        found[name] = ok[-1] if ok else outs[-1]
    return found


def injected(request: LLMRequest) -> str | None:
    """An injection that reached the model outside every data fence (the gullible part), else None."""
    texts = [request.system]
    for m in request.messages:
        for p in m.parts:
            texts.append(p.text if isinstance(p, TextPart) else p.content if isinstance(p, ToolResultPart) else "")
    for text in texts:
        plain = outside_fences(text)
        for mark in INJECTION_MARKS:
            if mark in plain.lower():
                return plain[plain.lower().index(mark) :][:80]
    return None


def _arguments(name: str, text: str, done: dict[str, dict[str, Any]], context: str, owner: str = "") -> dict[str, Any]:
    if name == "calculate_cost_impact":
        return EXAMPLE_COSTS
    if name == "web_search":
        return {"query": text[:100], "search_type": "statistics"}
    if name == "search_knowledge_base":
        return {"query": text[:200], "top_k": 3}
    if name == "simulate_negotiation":
        persona = "aggressive" if "高圧" in text else "logical" if "論理" in text else "cost_focused"
        return {
            "scenario": {
                "client_name": "取引先A社",
                "negotiation_goal": "10%の値上げ",
                "user_strengths": ["短納期", "品質"],
            },
            "opponent_persona": persona,
            "user_response": text[:500],
        }
    if name == "generate_chart":
        cost = done.get("calculate_cost_impact", {})
        if "scenarios" in cost:
            s = cost["scenarios"]
            cats = [  # the scenarios under the names the calculation gave them (the workbook's too)
                {"label": "現在価格", "value": cost["current_price"]},
                *({"label": s[k]["label"], "value": s[k]["new_price"]} for k in ("minimum", "standard", "premium")),
            ]
            return {
                "data": {"categories": cats},
                "chart_type": "bar",
                "title": "松竹梅の価格案（円）",
                "y_label": "価格（円）",
            }
        series = [{"date": str(y), "value": v} for y, v in ((2021, 100), (2022, 115), (2023, 145))]
        return {
            "data": {"time_series": series},
            "chart_type": "line",
            "title": "原材料価格指数の推移（例）",
            "y_label": "指数",
        }
    # generate_document: a letter for the buyer (its format is set by the caller). The sender, the
    # recipient and the rate come from what the owner said; what is not known yet is asked for, and the
    # letter made meanwhile is a draft (as a careful model would do, never with example names).
    chart = done.get("generate_chart", {})
    cost = done.get("calculate_cost_impact", {})
    said = _said(f"{text}\n{owner}")  # this message first, then the rest of the conversation
    standard = str(cost["scenarios"]["standard"]["price_increase_rate"]) if "scenarios" in cost else ""
    rate = said.get("rate") or standard
    draft = not (said.get("sender") and said.get("recipient") and rate)
    fields = {"effective_date": "2027年1月1日", "reply_by": "2026年12月15日"}
    return {
        "document_type": "request_letter",
        "tone": "formal",
        "format": "pdf",
        "draft": draft,
        "data": {
            "recipient": said.get("recipient", ""),
            "sender": said.get("sender", ""),
            "fields": {**fields, "increase_rate": rate} if rate else fields,
            "body": ["弊社の主力製品では、この1年で材料費が20%、エネルギー費が30%上昇しております。"],
        },
        "attachments": [chart["key"]] if "key" in chart else [],
        # an earlier turn's cost calculation (shown in the system prompt's tool results) counts too
        "include_cost_table": "scenarios" in cost or '"tool": "calculate_cost_impact"' in context,
    }


SENDER = re.compile(r"差出人[はをが：:]\s*([^、。\n]+)")
RECIPIENT = re.compile(r"宛[名先][はをが：:]\s*([^、。\n]+)")
RATE = re.compile(r"(\d+(?:\.\d+)?\s*[%％])\s*(?:の|で)?\s*(?:値上げ|改定|価格改定)")  # 5%の値上げ, 10%で改定


def _said(text: str) -> dict[str, str]:
    """Sender, recipient and a rate the owner named (差出人は…、宛名は…、10%で), when they did."""
    found: dict[str, str] = {}
    for key, pattern in (("sender", SENDER), ("recipient", RECIPIENT)):
        match = pattern.search(text)
        if match:
            found[key] = re.sub(r"(です|でお願いします)$", "", match.group(1).strip()).strip()
    rate = RATE.search(text.split("\n", 1)[0])  # a rate asked for in this message, not a cost's rise
    if rate:
        found["rate"] = rate.group(1).replace(" ", "")
    return found


def _final(text: str, done: dict[str, dict[str, Any]]) -> str:
    if not done:
        return (
            MARK + "価格転嫁のご相談ですね。原価の内訳（材料費・労務費・エネルギー費・その他の金額）と、"
            "各費目の上昇率を教えていただければ、試算（CHECK 3, 9）からお手伝いします。"
        )
    lines = [MARK + "ご依頼の内容を実行しました。"]
    for name, out in done.items():
        if "error" in out:
            lines.append(f"- {tool_label(name)}: 実行できませんでした（{str(out['error'])[:80]}）")
        elif name == "calculate_cost_impact":
            s = out["scenarios"]
            lines.append(
                f"- **コスト試算**（例示の原価構成）: 総コスト {yen(out['current_total_cost'])} → "
                f"{yen(out['new_total_cost'])}（{percent(out['cost_increase_rate'], signed=True)}）。"
                f"梅 {yen(s['minimum']['new_price'])}、竹 {yen(s['standard']['new_price'])}、"
                f"松 {yen(s['premium']['new_price'])}。"
            )
        elif name == "generate_chart":
            lines.append(f"- **グラフ**（社内用）: {out['summary']}")
        elif name == "generate_document":
            made = "下書きとして" if out.get("draft") else ""
            line = f"- **価格改定のお願い**（取引先提出用）を{made}PDFとWordで作成しました。"
            if out.get("enclosures"):
                line += f"添付は{'、'.join(out['enclosures'])}です。"
            if "generate_chart" in done and "グラフ" not in out.get("enclosures", []):
                line += "社内用の松竹梅のグラフは取引先に渡せないため添付していません。"
            if out.get("draft"):
                line += "差出人（貴社名・代表者名）と宛名（取引先の会社名・部署名）、改定率を教えてください。"
            lines.append(line)
        elif name == "search_knowledge_base":
            if not out["results"]:  # nothing in the knowledge base holds the question: say so, cite nothing
                lines.append(f"- {tool_label(name)}: {out.get('note', '')}")
            for r in out["results"][:2]:
                lines.append(
                    f"- 根拠: {r['metadata']['document']}「{r['metadata']['section']}」（出典: {r['source']}）"
                )
        elif name == "web_search":
            for r in out["results"][:2]:
                lines.append(f"- 参考: {r['title']}（{r['url']}）")
        elif name == "simulate_negotiation" and out["feedback"].get("legal_flags"):
            flag = out["feedback"]["legal_flags"][0]
            lines.append(f"- 相手役: {out['opponent_response']}（{out['feedback']['score']}点）")
            lines.append(f"- **注意**: {flag['concern']}（{flag['document']}「{flag['section']}」 {flag['source']}）")
            continue
        elif name == "simulate_negotiation":
            lines.append(f"- 相手役: {out['opponent_response']}（{out['feedback']['score']}点）")
    if done.get("search_knowledge_base", {}).get("results"):
        lines.append(
            "※これは一般的な情報で、法律相談ではありません。個別の判断は弁護士や下請かけこみ寺にご相談ください。"
        )
    lines.append("次は、参考ステップの STEP 3（交渉の申し入れ）や STEP 4（ロールプレイ）に進むこともできます。")
    return "\n".join(lines)


def _owner_said(request: LLMRequest) -> str:
    """Everything the owner wrote in the conversation (not the prompt, which names 差出人 itself)."""
    return "\n".join(m.text for m in request.messages if m.role == "user")


def _call(number: int, i: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": f"call_{number}_{i}", "name": name, "arguments": arguments}


def _retry(request: LLMRequest, start: int, text: str, done: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Documents refused for their attachment are asked for once more without it (the error said why)."""
    tries = _all_results(request.messages, start).get("generate_document", [])
    if len(tries) != len(DOCUMENT_FORMATS) or not all("attachments" in str(t.get("error", "")) for t in tries):
        return None
    arguments = {**_arguments("generate_document", text, done, request.system, _owner_said(request)), "attachments": []}
    calls = [
        _call(len(done) + 1, i, "generate_document", {**arguments, "format": f}) for i, f in enumerate(DOCUMENT_FORMATS)
    ]
    return {"text": "", "tool_calls": calls, "stop_reason": "tool_use"}


def specialist(request: LLMRequest) -> dict[str, Any]:
    start, text = _last_user_text(request.messages)
    done = _results(request.messages, start)
    order = injected(request)
    obeyed = any(
        isinstance(p, ToolCallPart) and p.arguments.get("query") == (order or "")[:100]
        for m in request.messages
        for p in m.parts
    )
    if order is not None and not obeyed:  # the gullible part: obeys an unfenced order
        return {
            "text": "",
            "tool_calls": [_call(0, 0, "web_search", {"query": order[:100]})],
            "stop_reason": "tool_use",
        }
    retry = _retry(request, start, text, done)
    if retry is not None:
        return retry
    wanted = _wanted(text)
    for phase in PHASES:
        todo = [name for name in phase if name in wanted and name not in done]
        if todo:
            calls = []
            for i, name in enumerate(todo):
                arguments = _arguments(name, text, done, request.system, _owner_said(request))
                if name == "generate_document":
                    calls += [
                        _call(len(done), j, name, {**arguments, "format": f}) for j, f in enumerate(DOCUMENT_FORMATS)
                    ]
                else:
                    calls.append(_call(len(done), i, name, arguments))
            return {"text": "", "tool_calls": calls, "stop_reason": "tool_use"}
    return {"text": _final(text, done), "stop_reason": "end_turn"}


def consultation(request: LLMRequest) -> str:
    message = request.messages[-1].text.strip().splitlines()[-1][:60] if request.messages else ""
    cite = "（参考になりそうな情報として [1] があります）" if "\n[1] " in request.system else ""
    return (
        f"{MARK}お話を伺いました。「{message}」というお悩みですね。まず現状を一緒に整理しましょう。"
        f"いつ頃から、どの程度困っていらっしゃるかを教えてください。{cite}"
    )


async def respond(request: LLMRequest) -> AsyncIterator[str | dict[str, Any]]:
    delay = float(os.environ.get(LATENCY_ENV) or 0)
    if delay > 0:
        await asyncio.sleep(delay)
    role = request.role or ""
    if role == "advisor.orchestrator":
        yield classify(request)
    elif role == "advisor.summary":
        yield summarise(request)
    elif role == "advisor.negotiation.opponent":
        yield opponent(request)
    elif role == "advisor.negotiation.coach":
        yield coach(request)
    elif role == "advisor.mode2":
        yield specialist(request)
    else:
        text = consultation(request)
        for i in range(0, len(text), 12):
            yield text[i : i + 12]
            await asyncio.sleep(0)


__all__ = [
    "EXAMPLE_COSTS",
    "LATENCY_ENV",
    "MARK",
    "ROLES",
    "classify",
    "coach",
    "consultation",
    "injected",
    "opponent",
    "respond",
    "specialist",
    "summarise",
]
