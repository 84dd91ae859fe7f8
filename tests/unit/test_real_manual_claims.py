"""Claims on real manuals Debian ships (maint-guide, developers-reference, aptitude-doc-ja's chapters): no
listing noise, no cut sentences.

The pages are read from the installed packages (installed here when missing and apt-get can run;
``.ci/run`` installs them), never copied into the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.text.noise import is_listing_line
from nlp.analysis import AnalysisInput, analyse_texts
from nlp.claims import Claim, is_statement
from nlp.dependency_claims import open_figures
from nlp.findings import split_sentences
from research.debian_docs import can_install, doc_files, ensure_packages, installed
from scrapers.extract import ExtractedPage, extract_page

MANUALS = {
    "maint-guide": (Path("/usr/share/doc/maint-guide/html"), "*.en.html"),
    "developers-reference": (Path("/usr/share/doc/developers-reference/docs"), "[a-z]*.html"),
    # Japanese (GiNZA parses it); its chapters: the ld-*.html pages are screen dumps of terminal output
    "aptitude-doc-ja": (Path("/usr/share/doc/aptitude/html/ja"), "ch*.html"),
}
_FINISHED = re.compile(r"[.!?。！？][\"'”’)）」』\]]*$")


@pytest.fixture(scope="module")
def manual_claims() -> list[tuple[ExtractedPage, list[Claim]]]:
    packages = list(MANUALS)
    if not all(installed(p) for p in packages) and not can_install():
        pytest.skip(f"{', '.join(packages)} not installed and apt-get cannot run here (needs root on Debian)")
    ensure_packages(packages)
    pages = [
        extract_page(f.read_text(encoding="utf-8"), url=f.as_uri())  # decoded, as the collector passes it
        for root, pattern in MANUALS.values()
        for f in doc_files(root, pattern)
        if f.name not in ("search.html", "genindex.html", "developers-reference.html")
    ]
    analyses = analyse_texts([AnalysisInput(p.text, p.lang, None) for p in pages])  # no lang: detected
    return [(p, a.claims) for p, a in zip(pages, analyses, strict=True)]


def test_claims_are_whole_sentences_or_records(manual_claims: list[tuple[ExtractedPage, list[Claim]]]) -> None:
    claims = [c for _, cs in manual_claims for c in cs]
    assert len(claims) > 100
    for c in claims:
        assert "\n" not in c.text, c.text
        assert is_statement(c.text), c.text
        assert _FINISHED.search(c.text) or re.match(r"^[^:;]{1,80}: \S", c.text), f"cut sentence: {c.text!r}"
        assert not c.text.rstrip().endswith((",", ":", "(")), f"cut sentence: {c.text!r}"


def test_no_listing_noise_in_claims(manual_claims: list[tuple[ExtractedPage, list[Claim]]]) -> None:
    for _, claims in manual_claims:
        for c in claims:
            assert not is_listing_line(c.text), f"listing line taken as a claim: {c.text!r}"
            assert not c.text.startswith(("$ ", "# ", "-- ")), c.text
            assert "Josip Rodin <" not in c.text  # the changelog trailers of maint-guide's examples


def test_tables_and_definitions_become_records(manual_claims: list[tuple[ExtractedPage, list[Claim]]]) -> None:
    texts = [c.text for _, cs in manual_claims for c in cs]
    # maint-guide's table of manual page sections, one record per row
    assert any(t.startswith("Section: 8; Description: System administration") for t in texts)


def test_generic_claims_have_subject_and_attribute(manual_claims: list[tuple[ExtractedPage, list[Claim]]]) -> None:
    structured = [c for _, cs in manual_claims for c in cs if c.subject and c.attribute and c.values]
    assert ("debian/compat", "value", "10") in {(c.subject, c.attribute, c.values[0].raw) for c in structured}


def test_no_default_dates(manual_claims: list[tuple[ExtractedPage, list[Claim]]]) -> None:
    """These pages carry no date metadata: none may be invented (the issue saw 2000-01-01)."""
    assert all(page.published is None for page, _ in manual_claims)


def test_parsed_subjects_are_few_and_clean(manual_claims: list[tuple[ExtractedPage, list[Claim]]]) -> None:
    """The parse (nlp.dependency_claims) sees the figures the explicit shapes left here (versions, lengths
    "within 30 characters", dates as numbers) and must make no noise of them: any claim it adds is a
    finished sentence holding its figure, with a subject that is a phrase of the sentence, no digits."""
    left = [s for page, cs in manual_claims for s in split_sentences(page.text) if open_figures(s, cs)]
    assert len(left) >= 5  # the step ran on real sentences
    parsed = [c for _, cs in manual_claims for c in cs if c.parsed]
    # 「スクリーンに現れた長方形の内部には 10 個の地雷が隠されています。」: the noun the figure counts
    assert ("長方形", "地雷", "10") in {(c.subject, c.attribute, c.values[0].raw) for c in parsed}
    structured = [c for _, cs in manual_claims for c in cs if c.subject and c.attribute and c.values]
    assert len(parsed) * 10 < len(structured)  # the explicit shapes read almost everything
    for c in parsed:
        assert c.subject and c.attribute and c.values and not re.search(r"\d", c.subject), c
        assert c.subject in c.text.lower() and all(v.raw in c.text for v in c.values), c
