"""One small entity-label vocabulary shared by every language, and the maps into it.

GiNZA tags Sekine's extended named entities (ENE: ``Person``, ``Company``, ``Province``, ...).
``ginza.ent_label_ontonotes(token)`` is only a BIO wrapper around the table
``ginza.ENE_ONTONOTES_MAPPING`` (unknown labels -> ``OTHERS``), so spans are mapped with that table,
after a few overrides of ours, and then OntoNotes is folded into the common vocabulary below.
spaCy's English models emit OntoNotes labels, so they go through the same fold.
"""

from __future__ import annotations

from functools import cache
from typing import Literal, get_args

EntityLabel = Literal[
    "PERSON",
    "ORG",
    "GPE",
    "DATE",
    "MONEY",
    "PERCENT",
    "QUANTITY",
    "CARDINAL",
    "LAW",
    "PRODUCT",
    "EVENT",
    "NORP",
    "FAC",
    "WORK_OF_ART",
    "OTHER",
]
LABELS: frozenset[str] = frozenset(get_args(EntityLabel))

# ENE labels where GiNZA's OntoNotes table is wrong for business news (checked on ja_ginza 5.3.0).
ENE_OVERRIDES: dict[str, EntityLabel] = {
    "International_Organization": "ORG",  # IMF, WTO, OECD are organisations, not NORP groups
    "Political_Party": "ORG",  # 自民党 is an organisation
    "Political_Organization_Other": "ORG",
    "School": "ORG",  # 東京大学: universities are ORG in OntoNotes, not FAC
    "Research_Institute": "ORG",  # 理化学研究所
    "Public_Institution": "ORG",  # 大阪市役所 acts as an institution in news text
    "Money_Form": "OTHER",  # 円, ドル: a currency name, not an amount nor a product
    "ID_Number": "OTHER",
    "Numex_Other": "CARDINAL",
    "Offense": "OTHER",  # 詐欺 is not a named law
    "Doctrine_Method_Other": "OTHER",
    "Movement": "OTHER",
}

# OntoNotes labels outside the common vocabulary.
ONTONOTES_FOLD: dict[str, EntityLabel] = {
    "LOC": "GPE",  # GPE stands for all places (関東地方, 九州, rivers, seas)
    "TIME": "DATE",  # 午後3時: the vocabulary has one time-expression label
    "ORDINAL": "CARDINAL",  # 第3位, "first"
}


def from_ontonotes(label: str) -> EntityLabel:
    """Fold an OntoNotes label (spaCy English models, GiNZA's table) into the common vocabulary."""
    if label in LABELS:
        return label  # type: ignore[return-value]
    return ONTONOTES_FOLD.get(label, "OTHER")  # LANGUAGE, PHONE, EMAIL, URL, ANIMAL, OTHERS


def from_ene(label: str) -> EntityLabel:
    """Map a GiNZA (ENE) label: our overrides first, then GiNZA's ENE->OntoNotes table."""
    if label in ENE_OVERRIDES:
        return ENE_OVERRIDES[label]
    return from_ontonotes(_ginza_table().get(label, "OTHERS"))


@cache
def _ginza_table() -> dict[str, str]:
    """GiNZA's table, imported on first use so that English-only callers never import GiNZA."""
    from ginza import ENE_ONTONOTES_MAPPING

    return dict(ENE_ONTONOTES_MAPPING)


__all__ = [
    "ENE_OVERRIDES",
    "LABELS",
    "ONTONOTES_FOLD",
    "EntityLabel",
    "from_ene",
    "from_ontonotes",
]
