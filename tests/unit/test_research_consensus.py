"""One iteration's consensus on real corpus pages: per-report conflicts, scores, selection, unconfirmed findings."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import trafilatura
import yaml

from nlp.analysis import AnalysisInput, analyse_texts
from nlp.conflicts import claim_key
from research.consensus import explain_selection, index_claims, score_iteration, unconfirmed
from research.evidence import SourceDocument
from research.models import AgentReport, AgentStrategy, Finding, SourceReference
from research.scoring import ReportScore

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"  # conftest chdirs: locate from this file
OFFICIAL = "https://sme-price-survey.example/2024/autumn"
OFFICIAL_EN = "https://sme-price-survey.example/en/2024/autumn-summary"
ACADEMIC = "https://jease.example/articles/v12n2/buyer-concentration-pass-through"
BLOG = "https://machikouba-blog.example/entry/2024/12/10/kakaku-tenka"
TOPIC = "中小企業の価格転嫁の現状"


@pytest.fixture(scope="module")
def documents() -> dict[str, SourceDocument]:
    manifest: dict[str, Any] = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    pages = [p for p in manifest["pages"] if p["url"] in {OFFICIAL, OFFICIAL_EN, ACADEMIC, BLOG}]
    texts = [trafilatura.extract((CORPUS / p["file"]).read_text(encoding="utf-8")) or "" for p in pages]
    analyses = analyse_texts([AnalysisInput(t, p["lang"], p["published"]) for t, p in zip(texts, pages, strict=True)])
    return {
        p["url"]: SourceDocument(
            source=SourceReference(
                url=p["url"],
                title=p["title"],
                fetched_at=dt.datetime.now(dt.UTC),
                source_type=p["source_type"],
                published=str(p["published"]),
                lang=p["lang"],
            ),
            text=t,
            claims=a.claims,
        )
        for p, t, a in zip(pages, texts, analyses, strict=True)
    }


def _report(
    agent_id: int, documents: dict[str, SourceDocument], urls: list[str], finding_from: str, fragment: str
) -> AgentReport:
    claim = next(c for c in documents[finding_from].claims if fragment in c.text and c.values)
    finding = Finding(text=claim.text, source=finding_from, key=claim_key(claim), values=[v.raw for v in claim.values])
    return AgentReport(
        agent_id=agent_id,
        report_id=f"r{agent_id}",
        content="",
        strategy=AgentStrategy(agent_id=agent_id),
        sources=[documents[u].source for u in urls],
        generated_at=dt.datetime.now(dt.UTC),
        duration_ms=1,
        findings=[finding],
    )


def test_the_report_whose_sources_agree_becomes_the_consensus(documents: dict[str, SourceDocument]) -> None:
    agreeing = _report(1, documents, [OFFICIAL, OFFICIAL_EN, ACADEMIC], OFFICIAL, "49.7")
    mixed = _report(2, documents, [OFFICIAL, BLOG], BLOG, "約6割")
    scoring = score_iteration(TOPIC, [mixed, agreeing], documents, conflict_threshold=0.1)
    by_id = {s.report_id: s for s in scoring.scores}
    assert [s.report_id for s in scoring.scores] == ["r2", "r1"]  # every report scored, in the given order
    blog_conflicts = [c for c in by_id["r2"].conflicts if BLOG in (c.statement1.source, c.statement2.source)]  # type: ignore[attr-defined]
    assert blog_conflicts and by_id["r2"].consistency_score < by_id["r1"].consistency_score
    assert scoring.selected is agreeing and scoring.detail.startswith("agent 1's report r1 selected among 2")
    # for people: the topic's language, agents by number, no report id
    assert scoring.reason.startswith(
        "エージェント1の報告を採用（2件中）: 一貫性が最も高い（1.000、次点はエージェント2の"
    )
    assert "r1" not in scoring.reason and "r2" not in scoring.reason
    assert not scoring.flagged_for_review
    assert by_id["r1"].unverified_count == 0 and by_id["r2"].unverified_count == 1


def test_a_figure_only_one_origin_states_is_unconfirmed(documents: dict[str, SourceDocument]) -> None:
    index = index_claims(documents)
    assert unconfirmed(_report(1, documents, [OFFICIAL, ACADEMIC], OFFICIAL, "49.7"), index) == []
    blog = _report(2, documents, [BLOG], BLOG, "約6割")
    assert unconfirmed(blog, index) == blog.findings


def _score(report_id: str, consistency: float, coverage: float, overall: float) -> ReportScore:
    return ReportScore(
        report_id=report_id,
        consistency_score=consistency,
        source_reliability_score=0.5,
        coverage_score=coverage,
        overall_score=overall,
    )


def test_the_selection_is_explained_by_the_criterion_that_decided_it() -> None:
    """Ties are named until one criterion decides; a higher overall score passed over is said; the
    report ids (UUIDs in a run) never appear: agents are named by number."""
    agents = {"uuid-a": 1, "uuid-b": 2, "uuid-c": 3}
    scores = [_score("uuid-a", 0.9, 0.8, 0.8), _score("uuid-b", 0.9, 1.0, 0.85), _score("uuid-c", 0.7, 1.0, 0.9)]
    ja = explain_selection(scores, "uuid-b", agents, "ja")
    assert ja == (
        "エージェント2の報告を採用（3件中）: 2件が一貫性 0.900で並ぶ、"
        "網羅性が最も高い（1.000、次点はエージェント1の0.800）。総合スコア 0.850。"
        "エージェント3の報告は総合スコアが高い（0.900）ものの一貫性が低く（0.700）、仕様は一貫性を優先します"
    )
    en = explain_selection(scores, "uuid-b", agents, "en")
    assert en.startswith("agent 2's report chosen among 3: 2 reports tie on consistency 0.900; highest coverage")
    same = [_score("uuid-a", 0.9, 1.0, 0.8), _score("uuid-b", 0.9, 1.0, 0.8)]
    assert explain_selection(same, "uuid-a", agents, "ja").endswith("同点のため番号順でエージェント1。総合スコア 0.800")
    assert not any("uuid" in text for text in (ja, en))
