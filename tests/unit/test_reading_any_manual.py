"""Reading kinds of manual the first evaluation sets lacked (issue 36): asciidoc man pages, Sphinx and
DocBook definition lists of parameters, boxed notes, FAQ question headings; and the confidence of a
statement read in a manual's own entry. Pure logic on small pages written here."""

from __future__ import annotations

import datetime as dt

from nlp.context import PageContext, claim_context, in_definition, is_heading
from research.evidence import REFERENCE_ENTRY, SourceDocument, build_evidence
from research.models import Finding, SourceReference
from scrapers.extract import extract_page
from scrapers.structure import html_blocks, parse_html

ASCIIDOC_MANPAGE = """<html><head><title>tool(1)</title></head><body>
<div id="header"><h1>The tool manual</h1></div>
<div id="content">
<div class="sect1"><h2 id="_abstract">ABSTRACT</h2><div class="sectionbody"><p>This manual describes what the
tool does and how to use it. The installation from source is described first, then the command line options,
then the configuration file and every variable it may hold, and last how to report a bug or contribute a
change to the project.</p></div></div>
<div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2><div class="sectionbody">
<div class="verseblock"><pre class="content">tool [options] file</pre></div></div></div>
<div class="sect1"><h2 id="_options">OPTIONS</h2><div class="sectionbody"><div class="dlist"><dl>
<dt class="hdlist1">-C &lt;path&gt;</dt>
<dd><p>Run as if the tool was started in &lt;path&gt; instead of the current working directory.</p></dd>
<dt class="hdlist1">-v</dt><dt class="hdlist1">--version</dt>
<dd><p>Show the version and exit.</p></dd>
<dt class="hdlist1">tab-size (int)</dt>
<dd><p>Number of spaces per tab.</p><p>The default is 8 spaces.</p>
<div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>
<td class="content">Wide tabs make long lines wrap sooner.</td></tr></table></div></dd>
</dl></div></div></div>
</div></body></html>"""


def _texts(page: str) -> list[str]:
    root = parse_html(page)
    assert root is not None
    return [b.text for b in html_blocks(root)]


def test_an_asciidoc_man_page_is_read_whole_not_its_first_section_body() -> None:
    """asciidoc wraps every section in ``div.sectionbody``; the first one (an abstract) is no main container."""
    page = extract_page(ASCIIDOC_MANPAGE, url="file:///tool.1.html")
    assert "Run as if the tool was started in <path>" in page.text
    assert "The default is 8 spaces." in page.text


def test_every_block_of_a_definition_carries_its_term_and_shared_terms_are_joined() -> None:
    texts = _texts(ASCIIDOC_MANPAGE)
    assert "-C <path>: Run as if the tool was started in <path> instead of the current working directory." in texts
    assert "-v, --version: Show the version and exit." in texts
    assert "tab-size (int): The default is 8 spaces." in texts  # the second paragraph of the definition
    assert "tab-size (int): Wide tabs make long lines wrap sooner." in texts  # a boxed note inside it
    assert "Note" not in texts  # the note's title is a label, not a heading


SPHINX_CONFIG = """<html><body><div class="body" role="main"><section>
<h2>General configuration</h2>
<dl class="confval"><dt id="exclude_patterns">exclude_patterns</dt>
<dd><p>A list of glob-style patterns to exclude. The patterns available are:</p>
<ul><li><p>'library/xml.rst' – ignores that file</p></li></ul></dd>
<dt id="nitpicky">nitpicky</dt>
<dd><p>If true, Sphinx will warn about all references where the target cannot be found.</p>
<div class="admonition note"><p class="admonition-title">Note</p><p>Use -n to set it once.</p></div>
<div class="versionadded"><p><span>New in version 1.0.</span></p></div></dd></dl>
</section></div></body></html>"""


def test_a_boxed_note_does_not_end_the_section_and_a_lead_in_stays_in_its_definition() -> None:
    text = "\n\n".join(_texts(SPHINX_CONFIG))
    page = PageContext(text)
    added = text.index("nitpicky: New in version 1.0.")
    context = claim_context(page, "nitpicky: New in version 1.0.", added)
    # under its section (its term is in the sentence), not under "Note", nor led in by the other setting's list
    assert context == "General configuration", context
    row = text.index("'library/xml.rst'")
    assert "The patterns available are" in claim_context(page, "'library/xml.rst' – ignores that file", row)


def test_a_definitions_term_is_its_subject_not_a_parameter_the_previous_sentence_names() -> None:
    text = (
        "Automatic Vacuuming\n\n"
        "autovacuum_vacuum_cost_delay (floating point): Specifies the cost delay value used in automatic "
        "VACUUM operations. If -1 is specified, the regular vacuum_cost_delay value will be used. "
        "The default value is 2 milliseconds."
    )
    sentence = "The default value is 2 milliseconds."
    context = claim_context(PageContext(text), sentence, text.index(sentence))
    assert context == "Automatic Vacuuming › autovacuum_vacuum_cost_delay (floating point)", context


def test_a_question_standing_alone_is_a_faq_heading() -> None:
    assert is_heading("How do I add a field to a model?")
    assert is_heading('1.1. "WeeChat" という名前の由来は何ですか?')
    assert not is_heading("Why? Because the cookie domain does not match.")
    text = "Does Django scale?\n\nYes. Hardware is cheap.\n\nIs Django stable?\n\nYes, it is quite stable."
    page = PageContext(text)
    assert page.heading(text.index("Yes, it is")) == "Is Django stable?"


SPHINX_LITERAL_PROSE = """<html><body><div class="body" role="main"><section>
<h2>How can I see the raw SQL queries the tool is running?</h2>
<p>It is a list of dictionaries in order of query execution. Each dictionary has the following:</p>
<div class="highlight-default notranslate"><div class="highlight"><pre>``sql`` -- The raw SQL statement
``time`` -- How long the statement took to execute, in seconds.
</pre></div></div>
<p>Use it from the shell:</p>
<div class="highlight-default notranslate"><div class="highlight"><pre>&gt;&gt;&gt; from tool.db import connection
&gt;&gt;&gt; connection.queries
</pre></div></div>
<div class="highlight-python notranslate"><div class="highlight"><pre>from tool.db import connection
print(connection.queries)  # every query so far
</pre></div></div>
</section></div></body></html>"""


def test_prose_set_in_a_literal_block_is_read_and_code_is_not() -> None:
    """Sphinx sets text in a literal block when the author writes ``::``; its lines are sentences, read
    as items. Lines of code (a prompt, brackets, an assignment) keep the listing out."""
    texts = _texts(SPHINX_LITERAL_PROSE)
    assert "``time`` -- How long the statement took to execute, in seconds." in texts
    assert "``sql`` -- The raw SQL statement" in texts
    assert not any("connection.queries" in t or "from tool.db" in t for t in texts)


TODAY = dt.date(2025, 1, 1)


def _document(text: str, url: str, published: str | None) -> SourceDocument:
    ref = SourceReference(
        url=url, title="pam_timestamp", fetched_at=dt.datetime(2025, 7, 1, tzinfo=dt.UTC), published=published
    )
    return SourceDocument(source=ref, text=text)


def test_a_statement_in_a_manuals_own_entry_is_not_doubted_for_having_one_source() -> None:
    entry = "OPTIONS\n\ntimestamp_timeout=number: How long to treat a timestamp as valid. Default is 300 seconds."
    prose = "About\n\nMany sites keep the timestamp valid for a while. Default is 300 seconds."
    sentence = "Default is 300 seconds."
    assert in_definition(PageContext(entry), entry.index(sentence))
    assert not in_definition(PageContext(prose), prose.index(sentence))
    scores = {}
    for name, text, published in [
        ("entry", entry, None),
        ("prose", prose, None),
        ("dated", entry, "2024-05-01"),  # a dated page reports its day; agreement of sources decides
    ]:
        url = f"file:///{name}.html"
        finding = Finding(text=sentence, source=url, values=["300"])
        claims, _check = build_evidence([(1, finding)], {url: _document(text, url, published)}, [], today=TODAY)
        scores[name] = claims[0].confidence
    assert scores["entry"] == REFERENCE_ENTRY
    assert scores["prose"] == scores["dated"] == 0.25


def test_only_the_entry_for_what_is_asked_is_the_authority() -> None:
    """A reference entry is the primary source on its own subject: asked about the timestamp's
    lifetime it is 0.9; asked about another module's delay it is one source like any other."""
    text = "OPTIONS\n\ntimestamp_timeout=number: How long to treat a timestamp as valid. Default is 300 seconds."
    url = "file:///pam_timestamp.html"
    finding = Finding(text="Default is 300 seconds.", source=url, values=["300"])
    scores = {}
    for topic in (
        "How long does pam_timestamp treat a timestamp as valid by default?",
        "What is the default delay of pam_faildelay?",
    ):
        claims, _check = build_evidence([(1, finding)], {url: _document(text, url, None)}, [], today=TODAY, topic=topic)
        scores[topic] = claims[0].confidence
    assert list(scores.values()) == [REFERENCE_ENTRY, 0.25]
