"""Claims the report itself shows to be out of date, so that none of them is offered as a current fact.

An outdated conflict (:mod:`nlp.conflicts`) says that a page presents a figure as the current state
(「最新の調査…39.3%にとどまる」) while a later period has another figure. The report lists it under
古い数値; its summary must then not cite it as a supporting fact, nor what was built on it. A claim is
*superseded* when

* it is the stale side's sentence on the stale side's page (or a copy of that page), or
* it follows that sentence in the same paragraph and names no period of its own: it continues the same
  out-of-date statement (「すなわち、コスト上昇分の6割以上を…吸収している計算になる」 restates 39.3% as
  its complement). A sentence that names a period is about that period and is judged on its own.

Paragraphs are the blocks of the page text (:func:`nlp.context.blocks_of`). Texts are compared folded and
without whitespace, as citations are checked (research/evidence.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from nlp.conflicts import Conflict
from nlp.context import blocks_of
from nlp.values import fold, parse_values
from research.evidence import EvidencedClaim, SourceDocument
from research.reliability import origin_of


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", fold(text))


def _period(key: str | None) -> str:
    return key.rsplit("@", 1)[1] if key and "@" in key else "undated"


def superseded_claims(
    claims: Sequence[EvidencedClaim], conflicts: Sequence[Conflict], documents: Mapping[str, SourceDocument]
) -> list[str]:
    """Ids of the claims that state or continue a figure an outdated conflict shows to be stale, in
    ``claims`` order (rules in the module docstring)."""
    stale = [c.statement2 for c in conflicts if c.type == "outdated"]
    if not stale:
        return []
    origin = {url: origin_of(doc.source) for url, doc in documents.items()}
    found: list[str] = []
    for claim in claims:
        doc = documents.get(claim.source)
        if doc is None:
            continue
        for statement in stale:
            if origin.get(statement.source, statement.source) != origin[claim.source]:
                continue
            if _squash(claim.text) == _squash(statement.text) or _continues(doc.text, statement.text, claim):
                found.append(claim.claim_id)
                break
    return found


def _continues(text: str, stale_sentence: str, claim: EvidencedClaim) -> bool:
    """Whether ``claim`` follows the stale sentence in its paragraph without a period of its own."""
    if _period(claim.key) != "undated" or any(v.kind == "date" for v in parse_values(claim.text)):
        return False
    at, own = text.find(stale_sentence), text.find(claim.text)
    if at < 0 or own <= at:
        return False
    return any(b.start <= at and own + len(claim.text) <= b.end for b in blocks_of(text))


__all__ = ["superseded_claims"]
