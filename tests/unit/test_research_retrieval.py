"""Question-focused retrieval (research/retrieval.py): sub-questions, feedback, passage ranking, lead-ins."""

from __future__ import annotations

import os
import subprocess
import sys

from research.retrieval import (
    EXACT_BONUS,
    PassageRanker,
    context_of,
    feedback_query,
    identifiers,
    question_coverage,
    sub_questions,
)
from scrapers.search.base import SearchResult


def hit(rank: int, title: str, snippet: str) -> SearchResult:
    return SearchResult(url=f"file:///p{rank}", title=title, snippet=snippet, provider="local", rank=rank)


def test_readings_ask_different_questions() -> None:
    question = "What is the default StepLimit of the aptitude resolver?"
    assert sub_questions(question, "depth") == [question]
    keywords = sub_questions(question, "keywords")
    assert keywords[0].startswith("StepLimit") and question not in keywords and len(keywords) > 1
    assert identifiers("書式指定文字列のエスケープ %p のデフォルトサイズ") == ["%p"]


def test_feedback_adds_terms_the_first_results_share() -> None:
    results = [
        hit(1, "Resolver costs", "safety cost levels of the resolver"),
        hit(2, "Resolver options", "safety levels and cost components"),
        hit(3, "Other", "unrelated words"),
    ]
    expanded = feedback_query("resolver limit", results)
    assert expanded is not None and expanded.startswith("resolver limit ")
    assert {"safety", "cost"} <= set(expanded.split())
    assert feedback_query("resolver", [hit(1, "a", "b")]) is None


def test_passages_rank_by_question_and_exact_identifiers() -> None:
    passages = [
        "エスケープ表記: %P; 名前: 優先度; デフォルトサイズ: 3",
        "エスケープ表記: %p; 名前: パッケージ名; デフォルトサイズ: 30; 説明: パッケージの名前を出力します。",
        "マインスイーパには地雷が 10 個あります。",
    ]
    scores = PassageRanker(passages).relevance(["エスケープ %p のデフォルトサイズはいくつですか"])
    assert scores[1] > scores[0] > scores[2] and scores[1] > 1.0 - 1e-9 + EXACT_BONUS - 0.5
    assert question_coverage("default StepLimit", ["The default StepLimit is 5000."]) == 1.0


def test_lead_in_of_a_list_item_or_record() -> None:
    text = "NMU delays\n\nGive the maintainer time. Recommended delays:\n\nOther NMUs: 10 days\n\nUrgent: 2 days"
    assert context_of(text, text.index("Urgent")) == "Give the maintainer time. Recommended delays:"
    assert context_of("Intro sentence.\n\nBody.", 17) == ""


FEEDBACK_TIES = "zeta theta kappa delta sigma alpha omega gamma"


def test_feedback_breaks_ties_by_reading_order_not_by_set_order() -> None:
    """Eight terms each shared by both hits: the four kept are the first met in reading order, in every
    process (a set's iteration order, which the counts were once filled from, changes with PYTHONHASHSEED)."""
    results = [hit(1, "one", FEEDBACK_TIES), hit(2, "two", FEEDBACK_TIES)]
    assert feedback_query("question", results) == "question zeta theta kappa delta"
    script = (
        "from research.retrieval import feedback_query\n"
        "from scrapers.search.base import SearchResult\n"
        "hits = [SearchResult(url=f'file:///p{r}', title='t', snippet="
        + repr(FEEDBACK_TIES)
        + ", provider='l', rank=r)"
        " for r in (1, 2)]\n"
        "print(feedback_query('question', hits))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in (1, 2, 3)
    }
    assert outputs == {"question zeta theta kappa delta"}
