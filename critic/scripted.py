"""Test model of the critic (a scripted judge shipped with the package, never a real one).

Configure it as ``MAGI_LLM_PROVIDER=python:critic.scripted:judge``.

Deterministic for a given idea: its scores follow from the idea's words (which capabilities and
assets it mentions, its estimated revenue and profit) plus a stable offset from a hash of its text,
so two runs on the same input agree. Each sample (the prompt's 判定番号) adds a small seeded noise
(at most :data:`NOISE_SHARE` of each range), so ``--samples`` has a measurable spread. Token usage
is estimated from the lengths of the prompt, the output schema and the answer (Japanese ~2
characters a token, JSON schema ~4). ``CRITIC_SCRIPTED_LATENCY_S`` adds a fixed latency per call,
for benchmarks (not ``MAGI_...``: that prefix is reserved for settings).

No test hooks live here; tests script failures with ``core.llm.testing`` or their own providers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import re

from core.llm.base import LLMRequest, LLMResponse, Usage
from critic.prompt import SAMPLE_TAG

MODEL = "critic-scripted"
ROLES = ("critic.",)  # the LLM roles it answers (core.llm.factory refuses it for others)
LATENCY_ENV = "CRITIC_SCRIPTED_LATENCY_S"
NOISE_SHARE = 0.04

KEYWORDS: dict[str, tuple[str, ...]] = {
    "development": ("開発", "再開発", "用地", "建設", "ビル", "施設", "設計", "まちづくり"),
    "operations": ("運営", "管理", "テナント", "FM", "入居", "居住者", "サービス", "オフィス"),
    "finance": ("ファンド", "投資", "金融", "資金", "REIT", "証券化", "リース"),
    "innovation": ("DX", "AI", "データ", "デジタル", "アプリ", "プラットフォーム", "スタートアップ", "IoT"),
}
CAPS = {"development": 15.0, "operations": 13.0, "finance": 13.0, "innovation": 9.0}
ASSET_WORDS: dict[str, tuple[str, ...]] = {
    "marunouchi": ("丸の内", "大手町", "有楽町"),
    "tenants": ("テナント", "入居企業", "大手企業", "就業者"),
    "group": ("三菱", "グループ"),
    "outlets": ("アウトレット",),
    "residents": ("パークハウス", "居住者", "マンション", "住宅"),
}
GROWTH_WORDS = ("成長", "拡大", "高齢化", "脱炭素", "需要", "増加", "DX", "インバウンド")
_SAMPLE = re.compile(rf"\n*{SAMPLE_TAG}:\s*(\d+)\s*$")
_YEN = r"([\d,]+)\s*円"


def _hits(text: str, words: tuple[str, ...]) -> int:
    return sum(1 for w in words if w in text)


def _yen(text: str, label: str) -> float | None:
    found = re.search(rf"{label}\)?:\s*-?{_YEN}", text)
    return float(found.group(1).replace(",", "")) if found else None


def _scores(idea: str, sample: int) -> dict[str, float]:
    digest = hashlib.sha256(idea.encode("utf-8")).digest()
    offset = [b / 255.0 for b in digest]  # stable per idea, in [0, 1]
    noise = random.Random(int.from_bytes(digest[:8], "big") + sample)

    def value(name: str, maximum: float, share: float, index: int) -> float:
        base = maximum * min(1.0, max(0.0, share)) * (0.85 + 0.15 * offset[index])
        jitter = noise.uniform(-NOISE_SHARE, NOISE_SHARE) * maximum
        return round(min(maximum, max(0.0, base + jitter)), 1)

    revenue = _yen(idea, "estimatedRevenue") or 0.0
    profit = _yen(idea, "estimatedOperatingProfit")
    size_share = 0.15 if revenue <= 0 else (math.log10(revenue) - 7.0) / 4.5  # 100 M yen ~0.2, 30 bn ~0.8
    margin = (profit or 0.0) / revenue if revenue > 0 else 0.0
    scores = {
        "size": value("size", 20.0, size_share, 0),
        "growth": value("growth", 15.0, 0.35 + 0.12 * _hits(idea, GROWTH_WORDS), 1),
        "profitability": value("profitability", 15.0, 0.3 + 2.0 * max(0.0, margin), 2),
    }
    for index, (capability, words) in enumerate(KEYWORDS.items(), start=3):
        scores[capability] = value(capability, CAPS[capability], 0.15 + 0.22 * _hits(idea, words), index)
    assets = sum(1 for words in ASSET_WORDS.values() if _hits(idea, words))
    for index, name in enumerate(("resource_use", "brand", "strategic_value"), start=7):
        scores[name] = value(name, 10.0, 0.3 + 0.14 * assets, index)
    for index, name in enumerate(("logic", "feasibility", "uniqueness", "scale"), start=10):
        scores[name] = value(name, 5.0, 0.45 + 0.1 * assets, index)
    return scores


def _answer(idea: str, sample: int) -> dict[str, object]:
    s = _scores(idea, sample)
    assets = [asset for asset, words in ASSET_WORDS.items() if _hits(idea, words)]
    required = [c for c, words in KEYWORDS.items() if _hits(idea, words)] or ["innovation"]
    return {
        "market": {
            "reasoning": "推定売上から市場規模を、成長要因の数から成長性を、利益率から収益性を見積もった。",
            "size": s["size"],
            "growth": s["growth"],
            "profitability": s["profitability"],
        },
        "capabilities": {
            "required": required,
            "development": s["development"],
            "operations": s["operations"],
            "finance": s["finance"],
            "innovation": s["innovation"],
            "reasoning": f"アイデアが必要とする能力: {', '.join(required)}。",
        },
        "scenario": {
            "story": "活用する資産: "
            + ("、".join(ASSET_WORDS[a][0] for a in assets) if assets else "特定の資産に依存しない")
            + "。",
            "assets": assets,
            "resourceUse": s["resource_use"],
            "brand": s["brand"],
            "strategicValue": s["strategic_value"],
        },
        "verification": {
            "reasoning": "シナリオの因果・実現性・独自性・規模を、活用する資産の数から見積もった。",
            "hardToCopy": "丸の内の集積とグループ網の組み合わせ" if len(assets) >= 2 else "限定的",
            "logic": s["logic"],
            "feasibility": s["feasibility"],
            "uniqueness": s["uniqueness"],
            "scale": s["scale"],
        },
        "reasons": [f"資産 {len(assets)} 種を活用", f"必要能力 {len(required)} 種"],
    }


async def judge(request: LLMRequest) -> LLMResponse:
    """A provider function for the critic's prompts (others get a short text answer)."""
    latency = float(os.environ.get(LATENCY_ENV) or 0.0)
    if latency > 0:
        await asyncio.sleep(latency)
    user = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    first_user = next((m.text for m in request.messages if m.role == "user"), user)
    found = _SAMPLE.search(first_user)
    sample = int(found.group(1)) if found else 1
    idea = _SAMPLE.sub("", first_user)
    schema = json.dumps(request.output_schema or {}, ensure_ascii=False)
    prompt_chars = len(request.system) + sum(len(m.text) for m in request.messages)
    if request.output_schema is None:
        text = "critic.scripted answers the critic's structured prompts only."
        return LLMResponse(text=text, model=MODEL, usage=Usage(input_tokens=prompt_chars // 2, output_tokens=20))
    answer = _answer(idea, sample)
    usage = Usage(
        input_tokens=prompt_chars // 2 + len(schema) // 4,
        output_tokens=len(json.dumps(answer, ensure_ascii=False)) // 2,
    )
    return LLMResponse(output=answer, model=MODEL, usage=usage, stop_reason="end_turn")


__all__ = ["ASSET_WORDS", "CAPS", "GROWTH_WORDS", "KEYWORDS", "LATENCY_ENV", "MODEL", "NOISE_SHARE", "ROLES", "judge"]
