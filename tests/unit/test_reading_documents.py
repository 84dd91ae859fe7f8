"""Pages read as documents: structure-aware extraction, sentence segmentation, generic claims."""

from __future__ import annotations

import pytest

from core.text.noise import is_listing_line
from nlp.findings import split_sentences
from nlp.generic_claims import figure, generic_readings, normalise
from scrapers.extract import extract_page
from scrapers.structure import html_blocks, parse_html

PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<html lang="en"><head><title>Options</title><meta name="dcterms.date" content="2024-05-02"></head><body>
<div class="navheader"><a href="prev.html">Prev</a> 4.1 Next</div>
<nav><ul><li>Home</li><li>Chapter 9</li></ul></nav>
<div class="body">
<h2>4.2. Resolver<a class="headerlink" href="#r">¶</a></h2>
<p>The resolver stops after
a number of steps.<a class="footnote" href="#f1">[12]</a> It is configured below.</p>
<table><thead><tr><th>Option</th><th>Default</th><th>Description</th></tr></thead>
<tbody><tr><td>StepLimit</td><td>5000</td><td>Steps per attempt.</td></tr>
<tr><td>Timeout</td><td>30s</td><td>Seconds before giving up.</td></tr></tbody></table>
<dl><dt>max-size</dt><dd><p>Largest cache. The default is 1 GB.</p></dd></dl>
<pre class="screen">$ aptitude install foo
18805 postgres 49876 StartTransactionCommand 0 0</pre>
</div>
<div class="navfooter">Up Home</div>
</body></html>"""


def test_structure_keeps_records_and_drops_navigation_code_and_permalinks() -> None:
    root = parse_html(PAGE)
    assert root is not None
    texts = [(b.kind, b.text) for b in html_blocks(root)]
    assert texts == [
        ("heading", "4.2. Resolver"),
        ("paragraph", "The resolver stops after a number of steps. It is configured below."),
        ("record", "Option: StepLimit; Default: 5000; Description: Steps per attempt."),
        ("record", "Option: Timeout; Default: 30s; Description: Seconds before giving up."),
        ("record", "max-size: Largest cache. The default is 1 GB."),
    ]


def test_a_one_line_listing_completes_the_sentence_it_ends() -> None:
    """A command shown on its own line after "... or the command" is part of that sentence; a listing
    after a finished sentence, or of several lines, is not."""
    page = """<html><body><div class="body"><p>List the contents with the command</p>
<pre class="screen"><code class="prompt">$</code> lsinitramfs /boot/initrd.img</pre>
<p>Add this line to the file:</p><pre>Dav On</pre>
<p>It will unpack the archive.</p><pre>$ ls</pre>
<p>Enable it with:</p><pre>a2enmod dav
a2enmod dav_fs</pre></div></body></html>"""
    root = parse_html(page)
    assert root is not None
    assert [b.text for b in html_blocks(root)] == [
        "List the contents with the command lsinitramfs /boot/initrd.img",
        "Add this line to the file: Dav On",
        "It will unpack the archive.",
        "Enable it with:",
    ]


SPHINX_NOTES = """<html><body><div class="body" role="main">
<h1>Source packages</h1>
<p>Packages should not use convenience copies.<a class="footnote-reference brackets" href="#n2" id="r2">2</a>
See the list.<a class="footnote-reference brackets" href="#n1" id="r1">1</a></p>
<p>Copies stay unused.<a class="footnote-reference brackets" href="#n2" id="r2b">2</a></p>
<table><tr><th>Field</th><td>Value<a class="footnote-reference" href="#n3">3</a></td></tr></table>
<dl class="footnote brackets">
<dt class="label" id="n1"><span class="brackets"><a class="fn-backref" href="#r1">1</a></span></dt>
<dd><p>Rationale:</p><p>Several copies make security fixes harder.</p></dd>
<dt class="label" id="n2"><span class="brackets"><a class="fn-backref" href="#r2">2</a></span></dt>
<dd><p>For example, parts of the build system.</p></dd>
<dt class="label" id="n3"><span class="brackets">3</span></dt><dd><p>A cell note.</p></dd>
</dl></div></body></html>"""

DOCBOOK_NOTES = """<html><body><div class="section">
<p>Stop the system with halt<a href="#ftn.x1" class="footnote"><sup class="footnote">[15]</sup></a>. Then power off.</p>
<div class="footnotes"><div id="ftn.x1" class="footnote"><div class="para"><a href="#x1" class="para">\
<sup class="para">[15] </sup></a>With systemd, halt no longer powers the machine off.</div></div></div>
</div></body></html>"""

DOCUTILS_NOTES = """<html><body><main><p>Keep it short.<a class="footnote-reference" href="#f7">[7]</a></p>
<aside class="footnote brackets" id="f7"><span class="label"><span class="fn-bracket">[</span>\
<a href="#r7">7</a><span class="fn-bracket">]</span></span><p>Terminals are 80 columns wide.</p></aside>
</main></body></html>"""


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (
            SPHINX_NOTES,
            [
                "Source packages",
                "Packages should not use convenience copies. See the list.",
                "For example, parts of the build system.",
                "Rationale:",
                "Several copies make security fixes harder.",
                "Copies stay unused.",
                "Field: Value",
            ],
        ),
        (
            DOCBOOK_NOTES,
            ["Stop the system with halt. Then power off.", "With systemd, halt no longer powers the machine off."],
        ),
        (DOCUTILS_NOTES, ["Keep it short.", "Terminals are 80 columns wide."]),
    ],
    ids=["sphinx", "docbook", "docutils"],
)
def test_footnotes_are_read_after_the_paragraph_that_refers_to_them(page: str, expected: list[str]) -> None:
    """A note follows the first paragraph referring to it, in reference order, once; a note referred
    to from a table cell is left out (no paragraph can follow there), as are the marks and labels."""
    root = parse_html(page)
    assert root is not None
    assert [b.text for b in html_blocks(root)] == expected


def test_extract_page_takes_the_date_from_metadata_only() -> None:
    page = extract_page(PAGE, url="file:///options.html")  # a decoded str with an XML declaration
    assert page.published == "2024-05-02" and page.lang == "en" and page.title == "Options"
    undated = extract_page(PAGE.replace('<meta name="dcterms.date" content="2024-05-02">', ""), url="file:///o")
    assert undated.published is None


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Use e.g. PostgreSQL here. Then J. Smith said no. Next.",
            ["Use e.g. PostgreSQL here.", "Then J. Smith said no.", "Next."],
        ),
        ("See Fig. 3 for details. Done.", ["See Fig. 3 for details.", "Done."]),
        ("Run `make. Now` first. Then stop.", ["Run `make. Now` first.", "Then stop."]),
        (
            "If the value is -1 (the default),\nno limit applies. Next one.",
            ["If the value is -1 (the default),\nno limit applies.", "Next one."],
        ),
        (
            "Chapter 6. Building\n\n6.1. Complete build\n\nText.",
            ["Chapter 6. Building", "6.1. Complete build", "Text."],
        ),
        (
            "価格転嫁率は49.7%。「終了。」と述べた。\n\n見出し\n本文です。",
            ["価格転嫁率は49.7%。", "「終了。」と述べた。", "見出し", "本文です。"],
        ),
        (
            "Option: X; Default: 8; Description: One. Two.\nNext.",
            ["Option: X; Default: 8; Description: One. Two.", "Next."],
        ),
    ],
)
def test_sentences_are_not_cut(text: str, sentences: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == sentences


def test_generic_readings_from_records_defaults_copulas_and_changes() -> None:
    def read(text: str) -> list[tuple[str, str, float | None, bool]]:
        return [(s, a, v.value, change) for s, a, v, change in generic_readings(text)]

    assert read("Option: StepLimit; Default: 5000; Description: Steps per attempt.") == [
        ("StepLimit", "default", 5000.0, False)
    ]
    assert read("The checkpoint_timeout parameter defaults to 5min.") == [
        ("checkpoint_timeout", "default", 300.0, False)
    ]
    assert read("max-size: Largest cache. The default is 1 GB.") == [("max-size", "default", 1e9, False)]
    assert read("The compat level of debhelper is 10.") == [("debhelper", "compat level", 10.0, False)]
    assert read("Set debian/compat to 10.") == [("debian/compat", "value", 10.0, False)]
    assert read("キャッシュの上限は 100 MB です。") == [("キャッシュ", "上限", 1e8, False)]
    assert read("The number of packages increased from 30,000 to 59,000.") == [
        ("number of packages", "value", 30000.0, False),
        ("number of packages", "value", 59000.0, True),
    ]
    assert read("The new resolver is 3 times faster than the old resolver.") == [
        ("new resolver", "faster than old resolver", 3.0, False)
    ]
    assert read("aptitude は apt-get より約1.5倍遅い。") == [("aptitude", "ratio to apt-get", 1.5, False)]
    assert read("It is used by 3 tools.") == []  # no subject, and the value phrase does not open with the figure


def test_normalise_keeps_identifiers_apart_and_prose_folded() -> None:
    assert normalise("%D") != normalise("%d")
    assert normalise("The Compat Level") == "compat level"
    assert normalise("max_wal_size (integer)") == "max_wal_size"
    assert figure("30s") is not None and figure("30s").unit == "second"  # type: ignore[union-attr]


def test_listing_lines() -> None:
    assert is_listing_line("18805 postgresql49876 postgres StartTransactionCommand 0 0")
    assert is_listing_line(" -- Josip Rodin <joy-mg@debian.org>  Mon, 22 Mar 2010 00:37:31 +0100")
    assert not is_listing_line("Debian 9 supports a total of ten Linux architectures.")


def test_generic_claims_of_two_manuals_on_one_subject_conflict() -> None:
    """Outside any topic vocabulary: a table row and a sentence disagree on StepLimit's default."""
    from nlp.analysis import AnalysisInput, analyse_texts
    from nlp.conflicts import detect_conflicts, sourced

    pages = {
        "https://a.example/options": "Options\n\nOption: StepLimit; Default: 5000; Description: Steps.",
        "https://b.example/tuning": "Tuning the resolver\n\nThe StepLimit option defaults to 3000 steps.",
        "https://c.example/other": "Other notes\n\nThe cache holds at most 100 MB by default.",
    }
    analyses = analyse_texts([AnalysisInput(text, "en") for text in pages.values()])
    claims = [c for url, a in zip(pages, analyses, strict=True) for c in sourced(a.claims, url)]
    assert {(c.claim.subject, c.claim.attribute) for c in claims} >= {("StepLimit", "default")}
    conflicts = detect_conflicts(claims)
    assert [(c.subject, c.attribute) for c in conflicts] == [("StepLimit", "default")]
    assert {conflicts[0].statement1.value, conflicts[0].statement2.value} == {"5000", "3000"}
