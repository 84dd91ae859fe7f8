"""The critic's result as Markdown for the person who asked, in the ideas' language.

Each idea shows its reasons, its synergy story, its capability points and the arithmetic in words;
when no idea reaches ``critic.min_total``, the page says so and why. Labels come from
``data/critic/messages.yaml``; identifiers (capability and asset ids) stay in the JSON.
"""

from __future__ import annotations

from core.messages import Lang, catalogue, format_number, language_of
from critic.models import CriticOutput, IdeaEvaluation
from critic.scoring import rank


def _points(value: float | None, lang: Lang) -> str:
    return "—" if value is None else format_number(value, lang, 1)


class _Page:
    def __init__(self, lang: Lang) -> None:
        self.lang: Lang = lang
        self.c = catalogue("critic")

    def t(self, key: str, **fields: object) -> str:
        return self.c.text(key, self.lang, **fields)

    def name(self, prefix: str, key: str) -> str:
        full = f"{prefix}.{key}"
        return self.t(full) if full in self.c.messages else key


def critic_markdown(out: CriticOutput, lang: Lang | None = None) -> str:
    language: Lang = lang or language_of(" ".join(e.title for e in out.evaluations))
    p = _Page(language)
    ranked = rank(out.evaluations)
    best = ranked[0] if ranked else None
    lines: list[str] = []
    if out.selected_idea is not None and best is not None:
        lines += [p.t("title.selected", title=out.selected_idea.title), ""]
        lines.append(p.t("selected", title=best.title, total=_points(best.total_score, language)))
        why = p.t("why.best", total=_points(best.total_score, language))
        if len(ranked) > 1:
            why += p.t("why.ahead", title=ranked[1].title, total=_points(ranked[1].total_score, language))
            if best.total_score == ranked[1].total_score and not out.too_close_to_call:
                why += p.t("why.tie")
        lines.append(why + ("。" if language == "ja" else "."))
        if out.too_close_to_call:
            lines.append(p.t("why.close"))
    else:
        lines += [p.t("title.none"), ""]
        if best is not None:
            total, minimum = _points(best.total_score, language), format_number(out.min_total, language, 0)
            lines.append(p.t("why.none", title=best.title, total=total, minimum=minimum))
        lines.append(p.t("why.none_hint"))
    usage = out.usage
    lines += [
        p.t(
            "run.weights",
            market=format_number(out.weights.market, language),
            synergy=format_number(out.weights.synergy, language),
            samples=out.samples,
            model=out.model,
        ),
        p.t(
            "run.usage",
            calls=format_number(usage.llm.calls, language),
            input=format_number(usage.llm.input_tokens, language),
            output=format_number(usage.llm.output_tokens, language),
            largest=format_number(usage.max_tokens_per_evaluation, language),
            budget=format_number(usage.token_budget, language),
            cost=p.t("cost.unknown") if usage.llm.cost_usd == "unknown" else usage.llm.cost_text(),
        ),
        p.t("run.scores"),
        "",
        p.t("ranking.title"),
        "",
        p.t("ranking.header"),
        "|---|---|---|---|---|---|---|",
    ]
    order = ranked + [e for e in out.evaluations if e not in ranked]
    for i, e in enumerate(order, start=1):
        if e.status != "ok":
            status = p.t("ranking.timeout" if e.status == "timeout" else "ranking.failed")
            lines.append(f"| — | {e.title} | {status} | — | — | — | — |")
            continue
        weights = e.breakdown.weights.label() if e.breakdown else "—"
        market, synergy, total, spread = (
            _points(v, language) for v in (e.market_score, e.synergy_score, e.total_score, e.spread)
        )
        lines.append(f"| {i} | {e.title} | {market} | {synergy} | {weights} | {total} | {spread} |")
    lines += ["", p.t("ideas.title"), ""]
    for e in order:
        lines += _idea(e, p)
    return "\n".join(lines).rstrip() + "\n"


def _idea(e: IdeaEvaluation, p: _Page) -> list[str]:
    lang = p.lang
    if e.status != "ok" or e.breakdown is None:
        status = p.t("ranking.timeout" if e.status == "timeout" else "ranking.failed")
        return [p.t("idea.heading_failed", title=e.title, status=status), "", p.t("idea.error", error=e.error), ""]
    b = e.breakdown
    m, s = b.market, b.synergy
    heading = p.t("idea.heading", title=e.title, total=_points(e.total_score, lang))
    if e.cached:
        heading += p.t("idea.cached")
    lines = [heading, ""]
    if e.reasons:
        lines += [p.t("idea.reasons"), ""] + [f"- {r}" for r in e.reasons] + [""]

    def scored(key: str, **figures: float | None) -> str:
        """The message ``key`` with each of ``figures`` written as points."""
        return p.t(key, **{name: _points(value, lang) for name, value in figures.items()})

    market = scored("idea.market", score=m.score, size=m.size, growth=m.growth, profitability=m.profitability)
    lines += [market + (f" — {m.reasoning}" if m.reasoning else ""), ""]
    lines += [p.t("idea.story", story=s.scenario.story)]
    if s.scenario.assets:
        sep = "、" if lang == "ja" else ", "
        lines += ["", p.t("idea.assets", assets=sep.join(p.name("asset", a) for a in s.scenario.assets))]
    lines += ["", p.t("idea.capabilities", mapping=_points(s.mapping, lang)), "", p.t("idea.capabilities_header")]
    lines.append("|---|---|---|---|")
    for c in s.capabilities:
        strong = p.t("idea.strong") if c.strong else ""
        lines.append(
            f"| {p.name('capability', c.capability)} | {_points(c.points, lang)} | {_points(c.cap, lang)} | {strong} |"
        )
    sc, v = s.scenario, s.verification
    factor = {"scenario": format_number(sc.score, lang, 2), "verification": format_number(v.score, lang, 2)}
    lines += [
        "",
        p.t(
            "idea.scenario",
            resource_use=_points(sc.resource_use, lang),
            brand=_points(sc.brand, lang),
            strategic_value=_points(sc.strategic_value, lang),
            score=factor["scenario"],
        ),
    ]
    lines += [
        "",
        p.t(
            "idea.verification",
            logic=_points(v.logic, lang),
            feasibility=_points(v.feasibility, lang),
            uniqueness=_points(v.uniqueness, lang),
            scale=_points(v.scale, lang),
            score=factor["verification"],
        ),
    ]
    if v.hard_to_copy:
        lines += ["", p.t("idea.hard_to_copy", text=v.hard_to_copy)]
    lines += [
        "",
        p.t("idea.quality", quality=format_number(s.quality, lang, 2), **factor),
        "",
        p.t(
            "idea.synergy",
            score=_points(s.score, lang),
            mapping=_points(s.mapping, lang),
            quality=format_number(s.quality, lang, 2),
            multiplier=format_number(s.multiplier, lang, 2),
            unclamped=_points(s.unclamped, lang),
            clamped=p.t("idea.clamped") if s.unclamped > s.score else "",
        ),
    ]
    weights = {
        "market_weight": format_number(b.weights.market, lang),
        "synergy_weight": format_number(b.weights.synergy, lang),
    }
    if m.profit_rule:
        lines += ["", p.t("idea.profit_rule", **weights)]
    lines += [
        "",
        p.t(
            "idea.total",
            total=_points(e.total_score, lang),
            market_part=_points(b.market_part, lang),
            synergy_part=_points(b.synergy_part, lang),
            market=_points(e.market_score, lang),
            synergy=_points(e.synergy_score, lang),
            **weights,
        ),
    ]
    if e.warnings:
        lines += ["", p.t("idea.warnings", n=len(e.warnings))]
    return [*lines, ""]


__all__ = ["critic_markdown"]
