"""Answers that answer (research.question, research.answering, research.noise): what a question asks,
which sentences answer it, and what is not a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlp.analysis import AnalysisInput, analyse_texts
from research.answering import PageToRank, answer_tokens, rank_answers, select_findings
from research.debian_docs import can_install, ensure_packages, installed
from research.noise import noise_factor, noise_kind
from research.question import parse_question, stated_attributes
from scrapers.extract import extract_page


def test_question_entities_attributes_and_clauses() -> None:
    q = parse_question("How long is a digest authentication server nonce valid by default?")
    assert q.attributes == ("default", "duration") and q.entities == ()
    q = parse_question("aptitude の問題解決器の StepLimit のデフォルト値はいくつですか")
    assert "default" in q.attributes and "count" in q.attributes and q.entities == ("StepLimit",)
    q = parse_question("What is the default size of a request body, and what was it in 2.4.53 and earlier?")
    assert q.clauses == ("What is the default size of a request body", "what was it in 2.4.53 and earlier?")
    assert parse_question("/var パーティションには最低どれだけ割り当てるべきですか").attributes == ("minimum", "count")


def test_what_a_sentence_states() -> None:
    assert stated_attributes("The default is 128 kilobytes.") >= {"default", "size"}
    assert stated_attributes("最小 350MB で Debian をインストールできます。") >= {"minimum", "size"}
    assert "duration" in stated_attributes("The default is 600 seconds (10 minutes).")
    assert "duration" not in stated_attributes("Table 20.3 explains the severity levels.")


def test_camel_case_identifiers_meet_plain_words() -> None:
    assert {"limit", "request", "field"} <= set(answer_tokens("LimitRequestFields 100"))


def test_english_words_meet_their_other_forms_japanese_stays() -> None:
    question = set(answer_tokens("Why should removal and purge be tested?"))
    assert {"remov", "purg", "test"} <= question
    assert {"remov", "purg"} <= set(answer_tokens("bugs show up when packages are removed or purged"))
    assert "パッケージ" in answer_tokens("パッケージを削除する") and "2" in answer_tokens("version 2")


def test_noise_kinds_rank_last_unless_asked() -> None:
    about_rate = parse_question("中小企業の価格転嫁率")
    assert noise_kind("調査票は30万社に送付し、有効回答は3万6千社だった。", about_rate) == "survey methodology"
    assert noise_kind("調査票は30万社に送付した。", parse_question("調査の方法と回答数")) is None  # asked
    assert noise_factor("Next", about_rate) == 0.0
    assert noise_kind("Table 20.3 explains the message severity levels.") == "caption"
    assert noise_kind("表3.2 最低限必要なシステム") == "caption"
    history = "Compatibility: In httpd 2.4.53 and earlier, the default value was 0 (unlimited)"
    assert noise_kind(history, parse_question("What is the default request body limit?")) == "version history"
    assert noise_kind(history, parse_question("What was the default in 2.4.53 and earlier?")) is None
    assert noise_kind("LimitRequestFields Directive") == "heading"
    assert noise_factor("The default is 128 kilobytes.") == 1.0
    assert noise_kind("Available Languages: en | fr") == "navigation"
    assert noise_kind("Tables are kept in memory until the server stops.") is None  # "Table" + "s" is no label


def test_a_record_is_noise_only_when_every_field_is() -> None:
    question = parse_question("What is the largest login form that mod_auth_form parses by default?")
    record = "Syntax: AuthFormSize size; Default: AuthFormSize 8192; Compatibility: Available in Apache 2.3 and later"
    assert noise_kind(record, question) is None
    assert noise_kind("Compatibility: Available in Apache 2.3 and later", question) == "version history"
    history = "Compatibility: Available in Apache 2.3 and later; Note: Changed in version 2.4.7 to 8 KB"
    assert noise_kind(history, question) == "version history"


def test_a_short_sentence_ending_a_paragraph_is_no_heading() -> None:
    """ "You can find these programs by running lsof +L1" has no full stop (a listing ended it): judged
    alone it looks like a heading, but it ends a paragraph, so it is a candidate at full weight."""
    text = """Setting /usr read-only

Note that the Post-Invoke may fail with a "/usr busy" error message. You can find these programs by running lsof +L1

Stop or restart these programs and run the Post-Invoke manually."""
    pages = _pages(("https://docs.example/usr.html", "Mounting partitions", text))
    question = parse_question("Which command finds the programs that still hold deleted files open?")
    ranked = rank_answers(question, pages, [question.text])
    found = next(r for r in ranked if r.text.endswith("lsof +L1"))
    assert found.parts["noise"] == 1.0 and ranked.index(found) == 0
    assert noise_kind("You can find these programs by running lsof +L1") == "heading"  # alone, it would be


OTHER = """Bandwidth

The bandwidth unit is given by the network.

Units

Each unit of bandwidth is given in the configuration.

Given bandwidth

Bandwidth given per unit is logged."""


def test_which_unit_is_asked_and_the_page_title_names_the_subject() -> None:
    """The sentence giving the unit shares no word with the question, nor does its heading; it joins the
    candidates because it states a unit on the page titled with the module the question names."""
    question = parse_question("In which unit is the bandwidth for mod_ratelimit given?")
    assert question.attributes == ("unit",)
    assert "unit" in stated_attributes("The speed is specified, in KiB/s, using the variable rate-limit.")
    assert "unit" not in stated_attributes("The speed is specified using the variable rate-limit.")
    text = """Apache Module mod_ratelimit

Summary

Provides a filter named RATE_LIMIT to limit client bandwidth for each response. The connection speed \
to be simulated is specified, in KiB/s, using the environment variable rate-limit.

Example

If the value specified causes integer overflow, the rate limit will be disabled."""
    for title, joins in (("mod_ratelimit - Apache HTTP Server", True), ("Filters - Apache HTTP Server", False)):
        pages = _pages(("https://docs.example/m.html", title, text), ("https://docs.example/core.html", "Core", OTHER))
        ranked = rank_answers(question, pages, [question.text])
        unit = [r for r in ranked if "KiB/s" in r.text]
        assert bool(unit) is joins, title
        assert not joins or (unit[0].score > 0 and unit[0].parts["attributes"] == 1.0)


FAQ_SECTIONS = """Which databases does the tool support?

The tool supports several database engines through its database layer. Each database engine has a \
backend module, and the database backend is chosen per connection.

How do I add a database backend?

A database backend is a module that the tool loads for a database engine. Write the database backend \
and name it in the settings.

Can the database layer be replaced?

The database layer is optional: any database library works with the tool."""

PREREQUISITES = """What does the tool need?

For development you need no separate web server and no database server.

The tool runs SQLite by default, which comes with Python."""


def test_a_default_asked_joins_from_a_section_that_shares_the_question_s_words() -> None:
    """ "Which database does the tool use out of the box?" asks a default and no form of answer; the
    sentence giving it shares one word with the question, its section ("no database server") a second:
    it is a candidate although three other sections match the question better."""
    question = parse_question("Which database does the tool use out of the box?")
    assert question.attributes == ("default",)
    pages = _pages(
        ("https://docs.example/faq.html", "FAQ: databases", FAQ_SECTIONS),
        ("https://docs.example/install.html", "FAQ: installation", PREREQUISITES),
    )
    ranked = rank_answers(question, pages, [question.text])
    found = next(r for r in ranked if "SQLite by default" in r.text)
    assert found.parts["attributes"] == 1.0 and found.score > 0


def _pages(*texts: tuple[str, str, str]) -> list[PageToRank]:
    analyses = analyse_texts([AnalysisInput(text, "en", None) for _, _, text in texts])
    return [
        PageToRank(url=url, title=title, text=text, claims=a.claims)
        for (url, title, text), a in zip(texts, analyses, strict=True)
    ]


MANUAL = """Server settings

KeepAlive Directive

Description: Enables HTTP persistent connections; Default: KeepAlive On

Severity levels

Table 20.3 explains the message severity levels used by the server since 2019.

BufferSize Directive

Description: Maximum size in bytes to buffer by the buffer filter; Default: BufferSize 131072

The BufferSize directive sets the amount of data in bytes buffered for a request. The default is 128 kilobytes.

Prior to version 2.4.10 the buffer filter held at most 64 kilobytes."""

TRIVIA = """Buffer history

In 2019 the buffer of the old server held 2 requests; buffers were a popular topic in 2020."""


def test_the_sentence_that_answers_ranks_above_word_sharing_trivia() -> None:
    pages = _pages(
        ("https://docs.example/mod_buffer.html", "mod_buffer - server manual", MANUAL),
        ("https://blog.example/history.html", "a blog", TRIVIA),
    )
    question = parse_question("How much data does the buffer filter hold by default?")
    ranked = rank_answers(question, pages, [question.text])
    assert ranked[0].text == "The default is 128 kilobytes."
    assert ranked[0].context == "BufferSize Directive › BufferSize directive"
    assert ranked[0].parts["attributes"] == 1.0
    texts = [r.text for r in ranked]
    history = texts.index("Prior to version 2.4.10 the buffer filter held at most 64 kilobytes.")
    assert history > texts.index("The default is 128 kilobytes.")
    assert all(r.url == "https://docs.example/mod_buffer.html" for r in ranked[:2])
    assert rank_answers(question, list(reversed(pages)), [question.text])[0].text == ranked[0].text


def test_a_sentence_without_a_figure_answers_from_its_section() -> None:
    text = """Cron jobs

A cron job file name must not include any period or plus characters, as cron ignores such files.

Other files

Packages install 3 files in /etc."""
    pages = _pages(("https://docs.example/opersys.html", "The operating system", text))
    question = parse_question("Which characters must a cron job file name not contain?")
    findings, candidates = select_findings(question, pages, [question.text], per_page=3, limit=5)
    assert candidates >= 2
    first = findings[0]
    assert first.text.startswith("A cron job file name must not include any period or plus characters")
    assert first.context == "Cron jobs" and first.key is None


@pytest.fixture(scope="module")
def digest_page() -> PageToRank:
    if not installed("apache2-doc") and not can_install():
        pytest.skip("apache2-doc is not installed and apt-get cannot run here (needs root on Debian)")
    ensure_packages(["apache2-doc"])
    path = Path("/usr/share/doc/apache2-doc/manual/en/mod/mod_auth_digest.html")
    page = extract_page(path.read_text(encoding="utf-8"), url=path.as_uri())
    analysis = analyse_texts([AnalysisInput(page.text, "en", None)])[0]
    return PageToRank(url=page.url, title=page.title, text=page.text, claims=analysis.claims)


def test_a_real_manual_answers_a_question_in_plain_words(digest_page: PageToRank) -> None:
    """The directive's own table answers, though the question never names the directive."""
    question = parse_question("For how long is a digest authentication server nonce valid by default?")
    findings, _ = select_findings(question, [digest_page], [question.text], per_page=3, limit=3)
    assert any("AuthDigestNonceLifetime 300" in f.text for f in findings[:2]), [f.text for f in findings]


@pytest.fixture(scope="module")
def bundled_pages() -> list[PageToRank]:
    folder = Path(__file__).resolve().parents[2] / "data" / "corpus" / "pages" / "ja"
    files = sorted(folder.iterdir())
    pages = [
        extract_page(
            f.read_bytes(), url=f.as_uri(), content_type="text/html" if f.suffix.startswith(".htm") else "text/plain"
        )
        for f in files
    ]
    analyses = analyse_texts([AnalysisInput(p.text, "ja", None) for p in pages])
    return [PageToRank(p.url, p.title, p.text, a.claims) for p, a in zip(pages, analyses, strict=True)]


def test_on_the_bundled_corpus_survey_method_and_bylines_are_no_findings(bundled_pages: list[PageToRank]) -> None:
    question = parse_question("中小企業の価格転嫁の現状")
    findings, _ = select_findings(question, bundled_pages, [question.text], per_page=5, limit=15)
    assert len(findings) == 15
    assert all(noise_kind(f.text, question) is None for f in findings), [f.text for f in findings]
    assert any("49.7%" in f.text for f in findings[:5])
    # a news page's dateline or byline is not the subject of its sentences
    assert not any(f.context and ("発行日" in f.context or "取材班" in f.context) for f in findings)
    ranked = rank_answers(question, bundled_pages, [question.text])
    method = [r for r in ranked if noise_kind(r.text, question) == "survey methodology"]
    assert method and max(r.score for r in method) < ranked[len(ranked) // 4].score  # ranked last


def test_question_words_are_not_what_a_question_is_about() -> None:
    q = parse_question("How long may the short package description in debian/control be?")
    assert "long" not in q.terms and {"short", "description"} <= set(q.terms)
    assert "version" not in parse_question("How long should the upstream version string be kept?").attributes
    assert "version" in parse_question("Which debhelper version must Build-Depends list?").attributes
    assert "when" not in parse_question("Which format is used when a version has to be invented?").attributes
    assert "when" in parse_question("When must mass bug filing be announced?").attributes


def test_the_sentence_stating_what_is_asked_outranks_its_neighbours() -> None:
    """ "its length" is the upstream version's (two sentences back), "long" of the question is no
    subject, and a sentence stating a length answers "how long" though its figure has no known unit."""
    text = """Package name and version

The package name must consist only of lower case letters. It is a good idea to keep its length within 30 characters.

You should choose the upstream version to consist only of alphanumerics. It must start with a digit. \
It is good idea to keep its length within 8 characters if possible.

If you need to invent a version string, use the YYYYMMDD format such as 20110429 as upstream version."""
    pages = _pages(("https://docs.example/first.html", "First steps", text))
    question = parse_question("How long should the upstream version string of a Debian package be kept?")
    best = rank_answers(question, pages, [question.text])[0]
    assert best.text == "It is good idea to keep its length within 8 characters if possible."
    assert best.context == "Package name and version › upstream version" and best.parts["form"] == 0.8


def test_which_file_and_which_command_ask_for_a_path_and_a_program() -> None:
    assert parse_question("Which file lists the terminals on which root may log in?").attributes == ("path",)
    assert parse_question("ダウンロードしたパッケージはどのディレクトリに保存されますか").attributes == ("path",)
    assert "path" not in parse_question("Which file permissions should a setuid program have?").attributes
    assert parse_question("Which command shows the files inside an initramfs?").attributes == ("command",)
    assert "path" in stated_attributes("you need to change /etc/mkinitrd/mkinitrd.conf and set DELAY")
    assert "path" not in stated_attributes("See https://example.org/doc for details.")
    assert "command" in stated_attributes("or the command lsinitramfs /boot/initrd.img")


def test_a_sentence_stating_the_asked_form_joins_from_a_weak_section() -> None:
    """The section that answers shares few words with the question; its sentence naming a command joins
    the candidates all the same, and outranks the sentences of the better-matching section."""
    text = """Regenerating the image

The image file of the kernel package is regenerated when files change. Packed files are shown in the log.

Examining the contents

Occasionally it is useful to examine the contents. It is also possible to list the contents of an initramfs \
using the command lsinitramfs /boot/initrd.img"""
    pages = _pages(("https://docs.example/initramfs.html", "The initramfs", text))
    question = parse_question("Which command shows the files packed inside an initramfs image?")
    ranked = rank_answers(question, pages, [question.text])
    assert ranked[0].text.endswith("using the command lsinitramfs /boot/initrd.img")
    assert "Occasionally it is useful to examine the contents." not in {r.text for r in ranked}


def test_a_sentence_that_continues_another_reads_with_it() -> None:
    """ "All of such information ..." says where the standards are; it shares no word with the question
    but continues the sentence that does, so it ranks with it."""
    text = """Scope of this document

This reference does not discuss how to generate packages. Nor does it detail the standards Debian \
software must comply with. All of such information can be found in the Debian Policy Manual.

Other manuals

The installation manual explains how to install the system."""
    pages = _pages(("https://docs.example/scope.html", "Scope", text))
    question = parse_question("Which document details the standards that Debian software must comply with?")
    ranked = rank_answers(question, pages, [question.text])
    follow_up = next(r for r in ranked if r.text.startswith("All of such information"))
    assert ranked.index(follow_up) == 1 and follow_up.parts["claim"] > 0.5


def test_for_a_why_question_the_sentence_after_the_rule_gives_its_reason() -> None:
    """The manual states the rule, then its reason without "because"; the reason ranks first."""
    text = """Verifying the maintainer scripts

Create dummy packages with different versions to test your package in advance, so that the upgrade works. \
If the package has non-trivial maintainer scripts, be sure to test not only for install but also for remove \
and purge. Many maintainer script bugs show up when packages are removed or purged."""
    pages = _pages(("https://docs.example/checkit.html", "Checking the package", text))
    question = parse_question("Why should a package's removal and purge be tested, not only its installation?")
    ranked = rank_answers(question, pages, [question.text])
    assert ranked[0].text.startswith("Many maintainer script bugs") and ranked[0].parts["answers"] == 1.0
    how = parse_question("How should a package's removal and purge be tested?")  # no reason asked: no credit
    reason = next(r for r in rank_answers(how, pages, [how.text]) if r.text.startswith("Many maintainer"))
    assert reason.parts["attributes"] == 0.0


def test_if_not_set_asks_for_the_default() -> None:
    assert parse_question("環境変数を設定していなければどのページャが使われますか").attributes == ("default",)
    assert parse_question("Which pager is used if the variable is not set?").attributes == ("default",)
    assert "default" in stated_attributes("設定されていない場合のデフォルトは more です。")
    assert "version" not in parse_question("From which priority does a window manager package start?").attributes
