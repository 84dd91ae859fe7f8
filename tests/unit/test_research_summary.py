"""Executive summary (research.summary): extractive picks, sentence checks, LLM path and its fallbacks."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.errors import LLMError
from core.llm.base import LLMClient
from core.llm.fencing import fenced
from core.llm.testing import ScriptedClient
from research.evidence import Citation, EvidencedClaim
from research.summary import (
    PROMPT_PATH,
    ExecutiveSummary,
    check_sentences,
    extractive_summary,
    write_summary,
)

TOPIC_JA = "中小企業の価格転嫁の状況"
TOPIC_EN = "Price pass-through by Japanese SMEs"


def cite(n: int = 1) -> list[Citation]:
    return [
        Citation(url=f"https://example.org/{i}", title=f"page {i}", reliability=0.8, origin=f"o{i}", statement="…")
        for i in range(n)
    ]


def claim(
    claim_id: str,
    text: str,
    *,
    key: str | None = None,
    values: list[str] | None = None,
    entities: list[str] | None = None,
    confidence: float = 0.5,
    sources: int = 1,
    disputed: bool = False,
) -> EvidencedClaim:
    return EvidencedClaim(
        claim_id=claim_id,
        text=text,
        source="https://example.org/0",
        key=key,
        values=values or [],
        entities=entities or [],
        supporting=cite(sources),
        independent_origins=sources,
        confidence=confidence,
        disputed=disputed,
    )


RATE = claim(
    "c1",
    "2024年9月調査の価格転嫁率は49.7%だった。",
    key="価格転嫁率@2024-09",
    values=["49.7%"],
    entities=["中小企業庁"],
    confidence=0.78,
    sources=4,
)
RATE_VARIANT = claim(
    "c2", "価格転嫁率は約5割だった。", key="価格転嫁率@2024-09", values=["約5割"], confidence=0.6, sources=2
)
NONE_PASSED = claim(
    "c3",
    "中小企業庁によると、コスト上昇分を全く転嫁できなかった企業は20.1%だった。",
    key="非転嫁@2024-09",
    values=["20.1%"],
    entities=["中小企業庁"],
    confidence=0.55,
    sources=2,
)
DISPUTED = claim(
    "c4",
    "回答企業数は36,210社だった。",
    key="回答企業数@2024-09",
    values=["36,210社"],
    confidence=0.9,
    sources=3,
    disputed=True,
)
UNSUPPORTED = claim(
    "c5", "労務費の転嫁率は95.0%だった。", key="労務費@2024-09", values=["95.0%"], confidence=0.99
).model_copy(update={"supporting": [], "independent_origins": 0})
CLAIMS = [RATE, RATE_VARIANT, NONE_PASSED, DISPUTED, UNSUPPORTED]


async def run(topic: str, claims: list[EvidencedClaim], llm: LLMClient | None, lang: str = "ja") -> ExecutiveSummary:
    return await write_summary(topic, claims, llm, lang=lang)


# --- extractive_summary ---------------------------------------------------------------------------------------


def test_extractive_picks_top_claims_one_per_key_and_marks_disputed() -> None:
    text = extractive_summary(TOPIC_JA, CLAIMS, answer_first=False)
    lines = text.splitlines()
    assert lines[0] == f"「{TOPIC_JA}」について検証済みの主な事実:"
    bullets = lines[1:]
    # undisputed first by confidence; the lower-confidence variant of the same key is skipped; unsupported never
    assert bullets == [
        "- 2024年9月調査の価格転嫁率は49.7%だった。（確信度 0.78、独立した出典 4件）",
        "- 中小企業庁によると、コスト上昇分を全く転嫁できなかった企業は20.1%だった。（確信度 0.55、独立した出典 2件）",
        "- 回答企業数は36,210社だった。（異論あり、確信度 0.90、独立した出典 3件）",
    ]
    assert extractive_summary(TOPIC_JA, CLAIMS, answer_first=False) == text  # deterministic


def test_extractive_respects_max_sentences_and_english_and_empty() -> None:
    text = extractive_summary(TOPIC_EN, CLAIMS, max_sentences=1, answer_first=False)
    assert text.splitlines() == [
        f"Key verified facts on '{TOPIC_EN}':",
        "- 2024年9月調査の価格転嫁率は49.7%だった。(confidence 0.78, 4 independent sources)",
    ]
    assert extractive_summary(TOPIC_JA, [UNSUPPORTED]) == "検証済みの主張はありません。"
    assert extractive_summary(TOPIC_EN, []) == "No verified claims are available."


def test_extractive_keeps_claims_without_key_apart() -> None:
    a = claim("a", "Claim A is 10%.", values=["10%"], confidence=0.4)
    b = claim("b", "Claim B is 20%.", values=["20%"], confidence=0.3, sources=1)
    assert extractive_summary(TOPIC_EN, [b, a], answer_first=False).splitlines()[1:] == [
        "- Claim A is 10%. (confidence 0.40, 1 independent source)",
        "- Claim B is 20%. (confidence 0.30, 1 independent source)",
    ]


def test_extractive_answers_the_question_first_then_supporting_facts() -> None:
    """The claim most relevant to the question leads, even with a lower confidence than the others."""
    answer = claim("a", "The default StepLimit of the resolver is 5000 steps.", values=["5000"], confidence=0.3)
    other = claim("b", "The archive holds 30000 source packages.", values=["30000"], confidence=0.9, sources=3)
    lines = extractive_summary("What is the default StepLimit?", [other, answer]).splitlines()
    assert lines == [
        "Answer: 5000 steps — The default StepLimit of the resolver is 5000 steps."
        " (confidence 0.30, 1 independent source) [page 0]",
        "Supporting facts:",
        "- The archive holds 30000 source packages. (confidence 0.90, 3 independent sources)",
    ]
    # no claim shares a term with the question: it says so plainly, then the facts
    first = extractive_summary("Unrelated words here", [other]).splitlines()[0]
    assert first == "The sources do not answer 'Unrelated words here' directly. Key verified facts:"


def test_a_figure_sources_agree_on_answers_before_a_lone_remark_under_a_matching_heading() -> None:
    """The remark's heading repeats the question's words, but one source with low confidence states it;
    the figure four sources agree on answers. A survey's method is no supporting fact."""
    remark = claim("r", "すなわち、コスト上昇分の6割以上を中小企業が自ら吸収している計算になる。", confidence=0.28)
    remark = remark.model_copy(update={"context": "価格転嫁の現状"})
    rate = claim("k", "中小企業の価格転嫁率は52.4%となった。", values=["52.4%"], confidence=0.75, sources=4)
    method = claim("m", "県内中小企業の価格転嫁の実態を把握するため、11月に実態調査を実施しました。", confidence=0.45)
    lines = extractive_summary("中小企業の価格転嫁の現状", [remark, method, rate], max_sentences=2).splitlines()
    assert lines[0].startswith("回答: 中小企業の価格転嫁率は52.4%となった。")
    assert not any("実態調査を実施" in line for line in lines)


def test_the_claim_from_the_page_titled_with_the_asked_module_answers() -> None:
    """Both records state a default; the one cited from the page about mod_auth_form answers a question
    about mod_auth_form, though the other shares more of its words."""
    size = claim("s", "Syntax: AuthFormSize size; Default: AuthFormSize 8192", values=["8192"])
    size = size.model_copy(update={"supporting": [cite()[0].model_copy(update={"title": "mod_auth_form - Apache"})]})
    other = claim("o", "Syntax: AuthnzFcgiCheckAuthnProvider provider; Default: none; parses the login form", values=[])
    other = other.model_copy(update={"supporting": [cite()[0].model_copy(update={"title": "mod_authnz_fcgi"})]})
    question = "What does mod_auth_form parse from a login form by default?"
    first = extractive_summary(question, [other, size]).splitlines()[0]
    assert first.startswith("Answer: 8192 — Syntax: AuthFormSize size; Default: AuthFormSize 8192"), first


# --- check_sentences ------------------------------------------------------------------------------------------


def test_check_keeps_matching_figures_full_width_and_approximate() -> None:
    text = "2024年9月の価格転嫁率は４９．７％だった。価格転嫁率は約5割にとどまる。"
    kept, removed = check_sentences(text, [RATE])
    assert kept == ["2024年9月の価格転嫁率は４９．７％だった。", "価格転嫁率は約5割にとどまる。"]
    assert removed == []


def test_check_removes_wrong_figures_wrong_years_and_unsupported_claims() -> None:
    text = (
        "価格転嫁率は63.2%に達した。"  # figure in no claim
        "価格転嫁率は約6割だった。"  # approximate, but does not agree with 49.7%
        "2023年の価格転嫁率は49.7%だった。"  # right figure, invented year
        "労務費の転嫁率は95.0%だった。"  # only in a claim without supporting citations
        "価格転嫁率は49.7%で、全く転嫁できない企業は12.0%だった。"  # one of two figures invented
    )
    kept, removed = check_sentences(text, CLAIMS)
    assert kept == []
    assert len(removed) == 5


def test_check_sentences_without_figures_need_entity_or_shared_terms() -> None:
    text = (
        "以下に要点をまとめる。"  # framing: removed
        "政府は補助金を拡充した。"  # nothing in common with the claims
        "中小企業庁の調査では転嫁の遅れが目立つ。"  # entity of a claim
        "コスト上昇分を転嫁できない企業が残る。"  # shares several terms with a claim
    )
    kept, removed = check_sentences(text, [RATE, NONE_PASSED])
    assert kept == ["中小企業庁の調査では転嫁の遅れが目立つ。", "コスト上昇分を転嫁できない企業が残る。"]
    assert removed == ["以下に要点をまとめる。", "政府は補助金を拡充した。"]


def test_check_strips_list_markers_and_handles_english() -> None:
    english = claim(
        "e1",
        "In September 2024 the price pass-through rate of SMEs was 49.7%.",
        values=["49.7%"],
        entities=["Small and Medium Enterprise Agency"],
    )
    text = (
        "Summary:\n"
        "1. In 2024, the pass-through rate was about 50%.\n"
        "- The rate reached 63.2% in 2024.\n"
        "* The Small and Medium Enterprise Agency ran the survey."
    )
    kept, removed = check_sentences(text, [english])
    assert kept == [
        "In 2024, the pass-through rate was about 50%.",
        "The Small and Medium Enterprise Agency ran the survey.",
    ]
    assert removed == ["Summary:", "The rate reached 63.2% in 2024."]


def test_check_without_verified_claims_removes_everything() -> None:
    kept, removed = check_sentences("労務費の転嫁率は95.0%だった。", [UNSUPPORTED])
    assert (kept, removed) == ([], ["労務費の転嫁率は95.0%だった。"])


# --- write_summary --------------------------------------------------------------------------------------------


async def test_llm_summary_keeps_supported_sentences_and_drops_invented_figure() -> None:
    llm = ScriptedClient(
        "2024年9月調査では、価格転嫁率は49.7%だった。"
        "中小企業庁によると、コスト上昇分を全く転嫁できなかった企業は20.1%だった。"
        "回答企業数は36,210社で、この数値には異論がある。"
        "前年の価格転嫁率は63.2%だった。"
    )
    summary = await run(TOPIC_JA, CLAIMS, llm)
    assert summary.written_by == "llm"
    assert summary.sentences_kept == 3
    assert summary.sentences_removed == ["前年の価格転嫁率は63.2%だった。"]
    assert summary.text.startswith("2024年9月調査では、価格転嫁率は49.7%だった。中小企業庁によると")
    assert "63.2" not in summary.text
    assert summary.claims_used == ["c4", "c1", "c2", "c3"]  # verified only, highest confidence first
    assert summary.note == "1 unsupported sentence(s) removed"

    (request,) = llm.requests
    assert request.temperature == 0.0
    assert request.output_schema is None
    assert request.system == PROMPT_PATH.read_text(encoding="utf-8").strip()
    prompt = request.messages[0].content
    assert fenced(prompt, "TOPIC") == [TOPIC_JA] and "Language: Japanese" in prompt
    assert "36,210社" in fenced(prompt, "CLAIMS")[0]  # page text reaches the model fenced as data
    assert (
        "1. 回答企業数は36,210社だった。 [figures: 36,210社; confidence 0.90; independent sources 3; DISPUTED]"
        in prompt
    )
    assert "95.0%" not in prompt  # the claim without supporting citations is not shown


async def test_llm_sees_at_most_twenty_claims() -> None:
    many = [claim(f"k{i:02d}", f"指標{i}は{i}.5%だった。", values=[f"{i}.5%"], confidence=i / 100) for i in range(30)]
    llm = ScriptedClient("指標29は29.5%だった。")
    summary = await run(TOPIC_JA, many, llm)
    assert summary.claims_used == [f"k{i:02d}" for i in range(29, 9, -1)]
    assert "20. " in llm.requests[0].messages[0].content and "21. " not in llm.requests[0].messages[0].content
    assert summary.text == "指標29は29.5%だった。"


async def test_llm_error_falls_back_to_extractive(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedClient(LLMError("provider timed out after 60 s"))
    with caplog.at_level(logging.WARNING, logger="research.summary"):
        summary = await run(TOPIC_JA, CLAIMS, llm)
    assert summary.written_by == "extractive"
    assert summary.text == extractive_summary(TOPIC_JA, CLAIMS)
    assert summary.claims_used == ["c3", "c1", "c4"]  # the answer (most relevant to the question) first
    assert summary.sentences_kept == 3
    assert summary.note is not None and "provider timed out" in summary.note
    assert "LLM call failed" in caplog.text


async def test_llm_with_only_unsupported_sentences_falls_back() -> None:
    llm = ScriptedClient("以下に要点をまとめる。価格転嫁率は63.2%だった。政府は補助金を拡充した。")
    summary = await run(TOPIC_JA, CLAIMS, llm)
    assert summary.written_by == "extractive"
    assert summary.sentences_removed == [
        "以下に要点をまとめる。",
        "価格転嫁率は63.2%だった。",
        "政府は補助金を拡充した。",
    ]
    assert summary.note is not None and "none of the 3 LLM sentence(s)" in summary.note
    assert summary.text == extractive_summary(TOPIC_JA, CLAIMS)


async def test_empty_llm_answer_falls_back() -> None:
    summary = await run(TOPIC_JA, CLAIMS, ScriptedClient(""))
    assert summary.written_by == "extractive"
    assert summary.note == "the LLM returned no text; extractive summary used"


async def test_no_llm_or_no_verified_claims_is_extractive_without_a_call() -> None:
    summary = await run(TOPIC_JA, CLAIMS, None)
    assert summary.written_by == "extractive" and summary.claims_used == ["c3", "c1", "c4"]
    llm = ScriptedClient("価格転嫁率は49.7%だった。")
    summary = await run(TOPIC_JA, [UNSUPPORTED], llm)
    assert llm.requests == []
    assert summary.text == "検証済みの主張はありません。"
    assert summary.note == "no verified claims to summarise"


async def test_english_topic_path() -> None:
    claims = [
        claim(
            "e1",
            "In September 2024 the price pass-through rate of Japanese SMEs was 49.7%.",
            key="pass-through@2024-09",
            values=["49.7%"],
            entities=["Small and Medium Enterprise Agency"],
            confidence=0.8,
            sources=3,
        ),
        claim(
            "e2",
            "The survey received 36,210 valid responses.",
            key="responses@2024-09",
            values=["36,210 valid responses"],
            confidence=0.7,
            sources=2,
        ),
    ]
    llm = ScriptedClient(
        "In September 2024, Japanese SMEs passed on 49.7% of their cost increases. "
        "The survey drew 36,210 responses. "
        "Most firms expect the rate to exceed 60% next year."
    )
    summary = await run(TOPIC_EN, claims, llm, lang="en")
    assert summary.written_by == "llm"
    assert summary.text == (
        "In September 2024, Japanese SMEs passed on 49.7% of their cost increases. The survey drew 36,210 responses."
    )
    assert summary.sentences_removed == ["Most firms expect the rate to exceed 60% next year."]
    assert "Language: English" in llm.requests[0].messages[0].content
    dumped = summary.model_dump(by_alias=True)
    assert dumped["writtenBy"] == "llm" and dumped["sentencesKept"] == 2

    fallback = await run(TOPIC_EN, claims, ScriptedClient(LLMError("rate limited")), lang="en")
    assert fallback.text.splitlines()[0].startswith("Answer: In September 2024 the price pass-through rate")


def test_a_bound_supports_only_a_bound() -> None:
    over_half = claim("b1", "令和7年3月の調査では価格転嫁率が初めて5割を超えた。", values=["5割を超えた"])
    kept, removed = check_sentences("価格転嫁率は5割を超えた。価格転嫁率は99.9%だった。", [over_half])
    assert kept == ["価格転嫁率は5割を超えた。"] and removed == ["価格転嫁率は99.9%だった。"]


# --- the newest dated value answers a question about the present -----------------------------------

RATE_2025 = claim(
    "c9",
    "令和7年3月の調査では、価格転嫁率は52.4%に上昇した。",
    key="価格転嫁率@2025-03",
    values=["52.4%"],
    confidence=0.55,
    sources=2,
)


def test_answer_uses_the_newest_dated_value_and_mentions_the_earlier_one() -> None:
    # the 2024-09 sentence matches the question better and is more confident, but 2025-03 is newer
    text = extractive_summary("中小企業の価格転嫁率の現状", [RATE, RATE_2025])
    answer = text.splitlines()[0]
    assert answer.startswith("回答: 令和7年3月の調査では、価格転嫁率は52.4%に上昇した。")
    assert answer.endswith("前回値: 49.7%（2024-09）")


def test_earlier_value_is_not_repeated_when_the_answer_states_it() -> None:
    rose = claim(
        "c11", "価格転嫁率は52.4%となり、前回の49.7%から上昇した。", key="価格転嫁率@2025-03", values=["52.4%"]
    )
    answer = extractive_summary("中小企業の価格転嫁率の現状", [RATE, rose]).splitlines()[0]
    assert answer.startswith("回答: 価格転嫁率は52.4%となり") and "前回値" not in answer


def test_answer_keeps_the_date_the_question_names() -> None:
    text = extractive_summary("2024年9月の中小企業の価格転嫁率", [RATE, RATE_2025])
    assert text.splitlines()[0].startswith("回答: 2024年9月調査の価格転嫁率は49.7%だった。")
    assert "前回値" not in text


def test_newest_value_is_not_taken_from_another_figure() -> None:
    other = claim("c10", "令和7年3月の回答企業数は38,951社だった。", key="回答企業数@2025-03", values=["38,951社"])
    answer = extractive_summary("中小企業の価格転嫁率の現状", [RATE, other]).splitlines()[0]
    assert answer.startswith("回答: 2024年9月調査の価格転嫁率は49.7%だった。")
    assert "前回値" not in answer


async def test_fallback_summary_answers_with_the_newest_value() -> None:
    summary = await write_summary("中小企業の価格転嫁率の現状", [RATE, RATE_2025], None)
    assert "52.4%" in summary.text.splitlines()[0]
    assert summary.claims_used[0] == "c9"


# --- answers that answer: each asked item, its value and citation, and what the sources do not answer -----


def test_each_asked_item_is_answered_with_its_context_and_citation() -> None:
    d = claim("d", "Default: %D size 8.", values=["8"], confidence=0.3).model_copy(update={"context": "%D"})
    p = claim("p", "%p: the package name; default size: 30.", values=["30"], confidence=0.3)
    other = claim("o", "The solver tries 5000 steps.", values=["5000"], confidence=0.9)
    lines = extractive_summary("What are the default sizes of %D and %p?", [other, d, p]).splitlines()
    assert lines[:3] == [
        "Answer:",
        "- %D: %D: Default: %D size 8. (confidence 0.30, 1 independent source) [page 0]",
        "- %p: %p: the package name; default size: 30. (confidence 0.30, 1 independent source) [page 0]",
    ]


def test_what_the_sources_do_not_answer_is_said_plainly() -> None:
    size = claim("s", "The default request body limit is 1073741824 bytes.", values=["1073741824"], confidence=0.3)
    text = extractive_summary("What is the default request body limit, and when was the limit introduced?", [size])
    lines = text.splitlines()
    assert lines[0] == "Answer:"
    assert lines[1].startswith("- What is the default request body limit: 1073741824 bytes — The default request body")
    assert lines[2] == "Not answered by the sources: when was the limit introduced?"
    # a claim sharing words but stating no asked attribute (no default) is not taken for the answer
    words = claim("w", "The request body of 20 forms was read.", values=["20"], confidence=0.9)
    first = extractive_summary("What is the default request body limit?", [words]).splitlines()[0]
    assert first.startswith("The sources do not answer")


def test_check_removes_cut_and_wrong_language_sentences() -> None:
    text = "2024年9月の価格転嫁率は49.7%だった。The pass-through rate was 49.7% in 2024. 価格転嫁率は49.7"
    kept, removed = check_sentences(text, [RATE], lang="ja")
    assert kept == ["2024年9月の価格転嫁率は49.7%だった。"]
    assert removed == ["The pass-through rate was 49.7% in 2024.", "価格転嫁率は49.7"]
    kept, removed = check_sentences("価格転嫁率は49.7%だった。価格転嫁率は約5割。", [RATE], lang="ja", cut=True)
    assert kept == ["価格転嫁率は49.7%だった。"] and removed == ["価格転嫁率は約5割。"]  # the answer hit its limit


# --- the answer a user reads first (issue 36) ------------------------------------------------------------------


def test_a_japanese_report_labels_its_summary_in_japanese_even_for_a_mostly_latin_question() -> None:
    """「PostgreSQL の autovacuum の既定値は？」 is mostly Latin letters; the report is Japanese, and so
    is every label of its summary: no "Answer:" or "Supporting facts:"."""
    naptime = claim("n", "autovacuum_naptime: The default is one minute (1min).", values=["1min"], confidence=0.3)
    other = claim("o", "The archive holds 30000 source packages.", values=["30000"], confidence=0.9, sources=3)
    lines = extractive_summary("autovacuum_naptime の既定値は？", [other, naptime]).splitlines()
    assert lines[0].startswith("回答: 1min ― autovacuum_naptime: The default is one minute (1min).")
    assert "裏付けとなる事実:" in lines
    assert not any(label in "\n".join(lines) for label in ("Answer:", "Supporting facts:", "Key verified facts"))


def test_a_question_naming_one_parameter_is_never_answered_with_another_parameters_value() -> None:
    """The wrong parameter's sentence shares more words and more sources; it is still no answer. When no
    claim names the asked parameter, the summary says the sources do not answer."""
    wrong = claim("w", "vacuum_cost_delay: The default value is 2 milliseconds for the cost delay.", values=["2"])
    wrong = wrong.model_copy(update={"confidence": 0.9, "independent_origins": 3})
    right = claim("r", "autovacuum_vacuum_cost_delay: The default value is 2 milliseconds.", values=["2"])
    question = "What is the default cost delay of autovacuum_vacuum_cost_delay?"
    first = extractive_summary(question, [wrong, right]).splitlines()[0]
    assert first.startswith("Answer: 2 milliseconds — autovacuum_vacuum_cost_delay:"), first
    first = extractive_summary(question, [wrong]).splitlines()[0]
    assert first.startswith("The sources do not answer"), first


def test_the_summary_names_the_claims_it_answers_with() -> None:
    answer = claim("a", "The default StepLimit of the resolver is 5000 steps.", values=["5000"], confidence=0.3)
    other = claim("b", "The archive holds 30000 source packages.", values=["30000"], confidence=0.9, sources=3)
    summary = asyncio.run(write_summary("What is the default StepLimit?", [other, answer], None, lang="en"))
    assert summary.answers == ["a"]
    assert summary.claims_used == ["a", "b"]
