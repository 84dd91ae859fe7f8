"""Claim keys in people's words: ``sme/full_pass_through_share`` → 「中小企業の全額転嫁できた企業の割合」.

The claim vocabulary (data/rules/claim_attributes.yaml) names what a figure measures with keys; the
research catalogue (data/research/messages.yaml) gives each key its Japanese and English label. A
qualified key (``labour_cost_pass_through_rate``) is the cost component's label joined to the
attribute's; a generic one (``rate:離職率``) is the phrase its page used.
"""

from __future__ import annotations

import re

from core.messages import Lang, catalogue


def _known(kind: str, key: str, lang: Lang) -> str | None:
    c = catalogue("research")
    return c.text(f"{kind}.{key}", lang) if f"{kind}.{key}" in c.messages else None


def attribute_label(attribute: str, lang: Lang) -> str:
    if ":" in attribute:  # a generic attribute: the page's own words
        return attribute.split(":", 1)[1]
    found = _known("attribute", attribute, lang)
    if found is not None:
        return found
    for qualifier in ("labour_cost", "raw_material", "energy"):
        rest = attribute.removeprefix(f"{qualifier}_")
        if rest != attribute and (base := _known("attribute", rest, lang)) is not None:
            q = _known("qualifier", qualifier, lang) or qualifier
            return catalogue("research").text("qualified.label", lang, qualifier=q, attribute=base)
    return attribute.replace("_", " ")


def subject_label(subject: str, lang: Lang) -> str:
    """A subject key in words; a segment (``segment:一次取引先``) is the phrase its page used."""
    if subject.startswith("segment:"):
        return subject.split(":", 1)[1]
    return _known("subject", subject, lang) or subject.replace("_", " ")


_FISCAL_YEAR = re.compile(r"^FY(\d{4})$")


def period_label(period: str, lang: Lang) -> str:
    """A claim key's period as people write it: a fiscal year ``FY2024`` is 「2024年度」 in Japanese;
    months and days stay ISO (2024-09), which both languages read."""
    found = _FISCAL_YEAR.match(period)
    return catalogue("research").text("period.fiscal_year", lang, year=found.group(1)) if found else period


def series_label(series: str, lang: Lang) -> str:
    """``subject/attribute`` as a person reads it."""
    subject, _, attribute = series.partition("/")
    return catalogue("research").text(
        "series.label", lang, subject=subject_label(subject, lang), attribute=attribute_label(attribute, lang)
    )


def unit_label(kind: str, unit: str | None, lang: Lang) -> str | None:
    """The axis unit of a figure of ``kind`` (``%``, ポイント; money and counts: the unit as written)."""
    found = _known("unit", kind, lang)
    if kind in ("money", "count", "number") and unit:
        return unit
    return found


def report_language(topic: str) -> Lang:
    """The report's language: English for an all-ASCII topic, else Japanese (as the engine decides)."""
    return "en" if topic.isascii() else "ja"


__all__ = ["attribute_label", "period_label", "report_language", "series_label", "subject_label", "unit_label"]
