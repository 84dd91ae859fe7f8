"""The judge's prompt: the profile in the system prompt (``data/critic/prompt.md``), one idea per call.

Each idea is judged alone, so its place among the other ideas cannot bias its scores (LLM judges
are known to favour answers by position). The system prompt is the same for every idea of a run,
which also lets providers cache it.
"""

from __future__ import annotations

from functools import cache
from string import Template

from core.llm.base import Message
from core.llm.fencing import fence
from core.resources import data_path
from critic.models import BusinessIdea
from critic.profile import Profile

SAMPLE_TAG = "判定番号"


@cache
def _template() -> Template:
    return Template(data_path("critic", "prompt.md").read_text(encoding="utf-8"))


LANGUAGE_WORDS = {"ja": "日本語", "en": "英語"}


def system_prompt(profile: Profile, language: str = "日本語") -> str:
    """The judge's instructions; ``language`` is the language its texts are written in (the ideas')."""
    base = profile.base
    capabilities = "\n".join(
        f"- {c.id}: {c.name}（{'・'.join(c.covers)}）強度 {c.strength_level} → 上限 {c.cap:g} 点"
        for c in base.capabilities
    )
    assets = "\n".join(f"- {a.id}: {a.name}: " + "、".join(f.text() for f in a.figures) for a in base.assets)
    criteria = "\n".join(f"- {c}" for c in profile.criteria) or "- なし"
    if profile.industry is not None:
        criteria = f"（業界: {profile.industry.title}）\n" + criteria
    return _template().substitute(
        company=base.company, capabilities=capabilities, assets=assets, criteria=criteria, language=language
    )


def _yen(value: float | None) -> str | None:
    return None if value is None else f"{value:,.0f} 円"


def idea_text(idea: BusinessIdea) -> str:
    """The idea as the judge reads it: its fields in a fixed order, empty ones left out."""
    fields = [
        ("タイトル", idea.title),
        ("概要", idea.description),
        ("対象顧客", idea.target_customer),
        ("顧客の課題", idea.customer_problem),
        ("提供価値", idea.value_proposition),
        ("収益モデル", idea.revenue_model),
        ("推定売上 (estimatedRevenue)", _yen(idea.estimated_revenue)),
        ("推定営業利益 (estimatedOperatingProfit)", _yen(idea.estimated_operating_profit)),
        ("市場機会 (marketOpportunity)", idea.market_opportunity),
        ("競争優位", idea.competitive_advantage),
        ("実現難易度", idea.implementation_difficulty),
        ("市場調査結果", idea.market_research),
    ]
    return "\n".join(f"{label}: {value}" for label, value in fields if value)


def messages_for(idea: BusinessIdea, sample: int) -> list[Message]:
    """The user turn of judgement ``sample`` (1-based) of ``idea``."""
    return [Message(role="user", content=f"# 事業アイデア\n{fence(idea_text(idea), 'IDEA')}\n\n{SAMPLE_TAG}: {sample}")]


__all__ = ["LANGUAGE_WORDS", "SAMPLE_TAG", "idea_text", "messages_for", "system_prompt"]
