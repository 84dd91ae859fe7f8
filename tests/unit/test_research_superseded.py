"""Claims the report shows to be out of date (research/superseded.py) are never offered as current facts."""

from __future__ import annotations

import datetime as dt

from nlp.conflicts import Conflict, Reading, Statement
from research.evidence import Citation, EvidencedClaim, SourceDocument
from research.models import SourceReference
from research.superseded import superseded_claims

OLD = "https://institute.example/2023/report"
COPY = "https://portal.example/2023/report-copy"
NEW = "https://survey.example/2025/spring"
STALE = "最新の調査(2022年9月)によれば、中小企業の価格転嫁率は39.3%にとどまる。"
TEXT = (
    "1. はじめに\n\n2022年は物価が急に上がった年であった。\n\n2. 現状\n\n"
    f"{STALE}すなわち、コスト上昇分の6割以上を中小企業が自ら吸収している計算になる。"
    "2022年11月の独自調査では、回答企業の54.1%が値上げを申し入れなかった。\n\n"
    "3. 課題\n\nコスト要素別では労務費の転嫁が遅れている。"
)


def _document(url: str, text: str, duplicate_of: str | None = None) -> SourceDocument:
    source = SourceReference(
        url=url, title=url, fetched_at=dt.datetime(2025, 7, 1, tzinfo=dt.UTC), duplicate_of=duplicate_of
    )
    return SourceDocument(source=source, text=text)


def _claim(cid: str, text: str, url: str = OLD, key: str | None = None) -> EvidencedClaim:
    citation = Citation(url=url, title=url, reliability=0.8, origin=url, statement=text)
    return EvidencedClaim(claim_id=cid, text=text, source=url, key=key, supporting=[citation], confidence=0.5)


def _outdated() -> Conflict:
    key = "sme/pass_through_rate@"
    return Conflict(
        conflict_id="c1",
        type="outdated",
        statement1=Statement(text="価格転嫁率は52.4%となった。", source=NEW, value="52.4%", key=key + "2025-03"),
        statement2=Statement(text=STALE, source=OLD, value="39.3%", key=key + "2022-09"),
        severity=3,
        confidence=0.9,
        reading=Reading(kind="superseded", preferred=1),
        subject="sme",
        attribute="pass_through_rate",
        when="2022-09",
    )


DOCUMENTS = {
    OLD: _document(OLD, TEXT),
    COPY: _document(COPY, "転載\n\n" + TEXT, duplicate_of=OLD),
    NEW: _document(NEW, "価格転嫁率は52.4%となった。"),
}


def test_the_stale_figure_and_what_its_paragraph_builds_on_it_are_superseded() -> None:
    claims = [
        _claim("stale", STALE, key="sme/pass_through_rate@2022-09"),
        _claim("built-on", "すなわち、コスト上昇分の6割以上を中小企業が自ら吸収している計算になる。"),
        _claim("own-date", "2022年11月の独自調査では、回答企業の54.1%が値上げを申し入れなかった。"),
        _claim("next-section", "コスト要素別では労務費の転嫁が遅れている。"),
        _claim("before", "2022年は物価が急に上がった年であった。"),
        _claim("newer", "価格転嫁率は52.4%となった。", NEW, "sme/pass_through_rate@2025-03"),
        _claim("copy", STALE, COPY, "sme/pass_through_rate@2022-09"),  # the copy of the stale page
    ]
    assert superseded_claims(claims, [_outdated()], DOCUMENTS) == ["stale", "built-on", "copy"]


def test_without_an_outdated_conflict_nothing_is_superseded() -> None:
    contradiction = _outdated().model_copy(update={"type": "contradiction"})
    assert superseded_claims([_claim("stale", STALE)], [contradiction], DOCUMENTS) == []
