"""Source reliability rules (research.reliability, data/rules/source_reliability.yaml)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.errors import ConfigError
from research.models import SourceReference
from research.reliability import RULES_PATH, explain, load_rules, origin_of, parse_rules, reliability_for

MANIFEST = Path(__file__).resolve().parents[2] / "data" / "corpus" / "manifest.yaml"
RULES = load_rules()


def src(url: str, source_type: str | None = None, duplicate_of: str | None = None) -> SourceReference:
    return SourceReference(
        url=url,
        title="t",
        fetched_at=datetime(2025, 1, 1, tzinfo=UTC),
        source_type=source_type,
        duplicate_of=duplicate_of,
    )


def valid_raw() -> dict[str, Any]:
    return {
        "default": 0.5,
        "domain_weight": 0.7,
        "type_priors": {"official": 0.9},
        "domains": [{"name": "gov", "score": 0.9, "suffixes": ["gov"]}],
    }


@pytest.mark.parametrize(
    "url",
    [
        "https://www.meti.go.jp/press/2024/x.html",
        "https://www.city.osaka.lg.jp/a",
        "https://www.census.gov/x",
        "https://www.gov.uk/guidance",
        "https://www.u-tokyo.ac.jp/ja/",
        "https://econ.stanford.edu/paper",
    ],
)
def test_public_and_academic_domains_rank_above_unknown(url: str) -> None:
    assert reliability_for(src(url)) >= 0.85 > RULES.default == reliability_for(src("https://unknown-site.example/"))


@pytest.mark.parametrize(
    "url",
    [
        "https://someone.hatenablog.com/entry/1",
        "https://note.com/user/n/abc",
        "https://ameblo.jp/x/entry-1.html",
        "https://medium.com/@a/post",
        "https://foo.blog.jp/archives/1",
        "https://blog.example.org/2024/1",
        "https://machikouba-blog.example/entry/1",
    ],
)
def test_blogs_rank_below_unknown(url: str) -> None:
    assert reliability_for(src(url)) < RULES.default


def test_ranking_go_jp_news_blog_unknown() -> None:
    go = reliability_for(src("https://www.meti.go.jp/a"))
    news = reliability_for(src("https://www.nikkei.com/article/1"))
    unknown = reliability_for(src("https://some-company.example/a"))
    blog = reliability_for(src("https://x.hatenablog.com/entry/1"))
    assert go > news > unknown > blog


def test_suffix_matches_whole_labels_only() -> None:
    assert "default" in explain(src("https://cargo.jp/a"))  # ends with "go.jp" but is not under it
    assert "default" in explain(src("https://notgov.example/"))


def test_type_priors_order_when_host_is_unknown() -> None:
    scores = [reliability_for(src("https://site.example/a", t)) for t in ("official", "academic", "news", "community")]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 4
    assert reliability_for(src("https://site.example/a", "no-such-type")) == RULES.default
    assert "type prior 'official'" in explain(src("https://site.example/a", "official"))


def test_domain_and_type_mix_by_documented_weight() -> None:
    w = RULES.domain_weight
    mixed = reliability_for(src("https://www.meti.go.jp/a", "news"))
    assert mixed == pytest.approx(w * 0.95 + (1 - w) * RULES.type_priors["news"])
    blog_as_news = reliability_for(src("https://note.com/u/n/1", "news"))
    assert blog_as_news < RULES.default < mixed  # a news-typed blog post stays low, a go.jp release high
    text = explain(src("https://www.meti.go.jp/a", "news"))
    assert "japanese government" in text and "go.jp" in text and "type prior 'news'" in text


def test_syndicated_copy_gets_its_origins_reliability() -> None:
    origin = src("https://www.nikkei.com/article/1", "news")
    copy = src("https://someone.hatenablog.com/entry/1", "news", duplicate_of=origin.url)
    assert reliability_for(copy) == reliability_for(origin)
    assert origin_of(copy) == origin_of(origin) == origin.url
    assert explain(copy).startswith(f"syndicated copy of {origin.url}")


def test_every_corpus_page_scores_by_its_declared_type() -> None:
    pages = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))["pages"]
    by_type: dict[str, list[float]] = defaultdict(list)
    for page in pages:
        score = reliability_for(src(page["url"], page["source_type"], page.get("duplicate_of")))
        assert 0.0 <= score <= 1.0
        by_type[page["source_type"]].append(score)
    means = {t: sum(v) / len(v) for t, v in by_type.items()}
    assert means["official"] > means["academic"] > means["news"] > means["community"]


def test_bundled_rules_are_bounded() -> None:
    assert 0 <= RULES.default <= 1 and 0 <= RULES.domain_weight <= 1
    assert all(0 <= r.score <= 1 for r in RULES.domains) and all(0 <= p <= 1 for p in RULES.type_priors.values())


def test_first_matching_rule_wins() -> None:
    raw = valid_raw()
    raw["domains"] = [
        {"name": "first", "score": 0.1, "suffixes": ["a.example"]},
        {"name": "second", "score": 0.9, "patterns": ["example$"]},
    ]
    rules = parse_rules(raw)
    assert reliability_for(src("https://x.a.example/"), rules) == 0.1
    assert reliability_for(src("https://b.example/"), rules) == 0.9


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.update(default=1.5), "default"),
        (lambda r: r.update(domain_weight="high"), "domain_weight"),
        (lambda r: r["type_priors"].update(news=-0.1), "type_priors.news"),
        (lambda r: r["domains"].append({"name": "bad", "score": 0.5, "patterns": ["("]}), "domains[1] ('bad')"),
        (lambda r: r["domains"].append({"name": "empty", "score": 0.5}), "domains[1] ('empty')"),
        (lambda r: r["domains"].append({"name": "typo", "score": 0.5, "sufixes": ["x"]}), "domains[1] ('typo')"),
        (lambda r: r["domains"].append({"score": 0.5, "suffixes": ["x"]}), "domains[1]"),
        (lambda r: r["domains"][0].update(score=None), "domains[0] ('gov').score"),
    ],
)
def test_bad_entries_are_named(change: Any, message: str) -> None:
    raw = valid_raw()
    change(raw)
    with pytest.raises(ConfigError, match=r"rules\.yaml.*" + re.escape(message)):
        parse_rules(raw, "rules.yaml")


def test_unreadable_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml"):
        load_rules(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("default: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.yaml.*not valid YAML"):
        load_rules(broken)
    assert RULES_PATH.name == "source_reliability.yaml"
