"""Subjects from context (nlp.context): headings, lead-ins, antecedents, key-value tables as one record."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlp.context import PageContext, claim_context, clean_heading, is_heading, subject_of
from research.debian_docs import can_install, ensure_packages, installed
from scrapers.extract import extract_page

PAGE = """BufferSize Directive

Description: Maximum size in bytes to buffer by the buffer filter; Default: BufferSize 131072

The BufferSize directive specifies the amount of data in bytes that will be buffered. The default is 128 kilobytes.

Recommended delays

The delays are:

Uploads fixing only release-critical bugs: 2 days

4.5.1.1. Disk space requirements

This parameter takes 15 GB."""


def at(text: str, needle: str) -> int:
    return text.index(needle)


def test_heading_lead_in_and_antecedent() -> None:
    page = PageContext(PAGE)
    default = "The default is 128 kilobytes."
    assert claim_context(page, default, at(PAGE, default)) == "BufferSize Directive › BufferSize directive"
    record = "Description: Maximum size"
    assert claim_context(page, record, at(PAGE, record)) == "BufferSize Directive"
    item = "Uploads fixing only release-critical bugs: 2 days"
    assert claim_context(page, item, at(PAGE, item)) == "Recommended delays › The delays are"
    sentence = "This parameter takes 15 GB."
    assert claim_context(page, sentence, at(PAGE, sentence)) == "Disk space requirements"  # numbering dropped


def test_what_counts_as_a_heading() -> None:
    assert is_heading("LimitRequestFields Directive")
    assert is_heading("3.4. 必要な最低限のハードウェア")
    assert not is_heading("The default is 5.")
    assert not is_heading("The delays are:")
    assert not is_heading("Default: KeepAliveTimeout 5")
    assert not is_heading("256 MB")  # a lone figure is a table cell, not a heading
    assert is_heading("4.14. Source package handling: debian/README.source")  # numbered: no record
    assert not is_heading("2.4.33 and earlier: unlimited")
    assert is_heading("Examples") and is_heading("Tables of limits")  # no caption: no label follows
    assert not is_heading("Table 20.3 Severity levels") and not is_heading("Example A")
    # a caption or a dateline is no subject for the sentences after it; a title with an era year is a title
    assert not is_heading("図表2-1 価格転嫁率の推移") and not is_heading("Fig. 3 Response times")
    assert not is_heading("令和7年5月30日 企画調整部") and not is_heading("公表日:令和7年7月4日 白書編集委員会")
    assert is_heading("令和6年度における下請取引の監視活動の状況") and is_heading("図書館の利用")
    assert clean_heading("4.5.1.1. Disk space requirements") == "Disk space requirements"


def test_subject_of_a_previous_sentence() -> None:
    assert subject_of("The LimitRequestFields directive allows the administrator to set a limit.") == (
        "LimitRequestFields directive"
    )
    assert subject_of("Set debian/compat to 10.") == "debian/compat"
    assert subject_of("StepLimit は解決器が試す手順の数です。") == "StepLimit"
    assert subject_of("問題解決器は依存関係を調べます。") == "問題解決器"
    assert subject_of("It is fine.") == ""


def test_japanese_anaphor_takes_the_topic_of_the_sentence_before() -> None:
    text = "設定\n\nAptitude::ProblemResolver::StepLimit は試す手順の上限です。この値の既定は 5000 です。"
    page = PageContext(text)
    sentence = "この値の既定は 5000 です。"
    assert "Aptitude::ProblemResolver::StepLimit" in claim_context(page, sentence, at(text, sentence))


@pytest.fixture(scope="module")
def apache_core() -> str:
    if not installed("apache2-doc") and not can_install():
        pytest.skip("apache2-doc is not installed and apt-get cannot run here (needs root on Debian)")
    ensure_packages(["apache2-doc"])
    page = Path("/usr/share/doc/apache2-doc/manual/en/mod/core.html")
    return extract_page(page.read_text(encoding="utf-8"), url=page.as_uri()).text


def test_a_directive_table_is_one_record_under_its_heading(apache_core: str) -> None:
    page = PageContext(apache_core)
    start = apache_core.index("Description: Limits the number of HTTP request header fields")
    record = apache_core[start : apache_core.index("\n", start)]
    assert "Default: LimitRequestFields 100" in record and "Syntax: LimitRequestFields number" in record
    assert "::" not in record  # a header cell's own colon is not doubled
    assert claim_context(page, record, start) == "LimitRequestFields Directive"  # no pilcrow
    prose = "The default value is defined by the compile-time constant DEFAULT_LIMIT_REQUEST_FIELDS"
    assert claim_context(page, prose, apache_core.index(prose)) == "LimitRequestFields Directive"


def test_a_docbook_sidebar_note_is_text_a_link_sidebar_is_navigation() -> None:
    html = """<html><body><div class="body">
    <ul class="docnav"><li><a href="a.html">戻る</a></li><li><a href="b.html">次へ</a></li></ul>
    <h2>1.6. リリースライフサイクル</h2><p>各安定版リリースの寿命は約 5 年と予定されています。</p>
    <div class="sidebar"><p class="title">CULTURE Debian LTS</p>
    <p>Debian LTS プロジェクトは 2014 年 6 月に始まりました。</p></div>
    <div class="sidebar"><a href="x.html">Chapter one</a> <a href="y.html">Chapter two</a></div>
    </div></body></html>"""
    text = extract_page(html, url="https://docs.example/lifecycle.html").text
    assert "2014 年 6 月に始まりました" in text
    assert "Chapter one" not in text and "戻る" not in text and "次へ" not in text


def test_an_antecedent_is_followed_back_through_a_chain_of_pronouns() -> None:
    text = (
        "Package names\n\nYou should choose the upstream version to consist only of alphanumerics. "
        "It must start with a digit. It is good idea to keep its length within 8 characters."
    )
    sentence = "It is good idea to keep its length within 8 characters."
    assert claim_context(PageContext(text), sentence, at(text, sentence)) == "Package names › upstream version"


def test_a_pronoun_later_in_the_sentence_points_back_too() -> None:
    text = (
        "Line 12 is the short description. "
        "Terminals are 80 columns wide so this shouldn't be longer than 60 characters."
    )
    sentence = text.split(". ", 1)[1]
    assert PageContext(text).antecedent(sentence, at(text, sentence)) == "short description"
    plain = "Line 12 is the short description. Terminals are 80 columns wide."
    assert PageContext(plain).antecedent("Terminals are 80 columns wide.", at(plain, "Terminals")) == ""


def test_subject_of_plain_english_is_its_first_noun_phrase() -> None:
    assert subject_of("Line 12 is the short description.") == "short description"
    assert subject_of("If the upstream source comes as a tarball, use it.") == "upstream source"
    assert subject_of("The same holds for the package name.") == "package name"


def test_a_lead_in_reaches_every_row_of_its_table_but_not_the_paragraph_after() -> None:
    rows = "\n\n".join(f"Section: {n}; Description: part {n}" for n in range(1, 10))
    text = f"Manual pages\n\nHere's a short list of manual page sections:\n\n{rows}\n\nIt ends here. Really."
    page = PageContext(text)
    assert claim_context(page, "Section: 8", at(text, "Section: 8")) == (
        "Manual pages › Here's a short list of manual page sections"
    )
    assert page.lead_in(at(text, "It ends here")) == ""


def test_a_definitions_later_sentences_are_about_its_term() -> None:
    text = """ディレクトリツリー

/var: 様々な可変データがこのディレクトリに収められます。通常は 2–3GB で足ります。

/tmp: プログラムが作成する一時データは、普通このディレクトリを利用します。通常は 40–100MB あれば充分です。"""
    page = PageContext(text)
    assert claim_context(page, "通常は 40–100MB あれば充分です。", at(text, "通常は 40")) == "ディレクトリツリー › /tmp"
    assert claim_context(page, "通常は 2–3GB で足ります。", at(text, "通常は 2")) == "ディレクトリツリー › /var"
    first = "/tmp: プログラムが作成する一時データは、普通このディレクトリを利用します。"
    assert claim_context(page, first, at(text, "/tmp:")) == "ディレクトリツリー"
