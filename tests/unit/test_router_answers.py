"""What the router answers itself (memory, time) and what it refuses to make up, through a real Turn."""

from __future__ import annotations

from datetime import UTC, datetime

from router.answers import time_answer, unavailable_answer
from router.conversation import Turn
from sessions.models import SessionPolicy, SessionState

POLICY = SessionPolicy()
NOON_UTC = datetime(2026, 3, 2, 3, 5, tzinfo=UTC)  # 12:05 in Tokyo, a Monday


def test_memory_answer_lists_the_visitors_own_questions_in_their_language() -> None:
    state = SessionState.new("m", "", NOON_UTC)
    Turn("料金はいくらですか？", 0.5, POLICY, answer=True)(state, NOON_UTC)
    Turn("Is there Wi-Fi?", 0.5, POLICY, answer=True)(state, NOON_UTC)
    ja = Turn("さっき何を聞いたか覚えてる？", 0.5, POLICY, answer=True)(state, NOON_UTC)
    assert ja.result.agent == "MemoryAgent" and ja.answer is not None
    assert "料金はいくらですか？" in ja.answer and "Is there Wi-Fi?" in ja.answer and "質問" in ja.answer
    en = Turn("What did I ask you earlier?", 0.5, POLICY, answer=True)(state, NOON_UTC)
    assert en.answer is not None and en.answer.startswith("Earlier in this conversation you asked")
    assert "さっき何を聞いたか覚えてる？" in en.answer  # the memory question itself is history too
    assert [e.role for e in state.history].count("assistant") == 2


def test_memory_answer_with_no_history_says_so() -> None:
    state = SessionState.new("empty", "", NOON_UTC)
    outcome = Turn("Do you remember what I said before?", 0.5, POLICY, answer=True)(state, NOON_UTC)
    assert outcome.answer == "You have not asked me anything earlier in this conversation."


def test_time_answer_is_tokyo_time() -> None:
    assert time_answer(NOON_UTC, "ja") == "現在の日本時間は2026年3月2日（月）12:05です。"
    assert time_answer(NOON_UTC, "en") == "It is 12:05 on Monday, 02 March 2026 in Japan (Asia/Tokyo)."


def test_other_agents_get_no_answer_and_nothing_invented() -> None:
    state = SessionState.new("x", "", NOON_UTC)
    outcome = Turn("営業時間は？", 0.5, POLICY, answer=True)(state, NOON_UTC)
    assert outcome.answer is None and outcome.result.agent == "BusinessInfoAgent"
    text = unavailable_answer("BusinessInfoAgent", "ja", request_type="hours")
    assert "営業時間" in text and "Agent" not in text
    assert not any(ch.isdigit() for ch in text)  # no hours, no prices made up
    assert "engineercafe.jp" in text  # what the visitor can do next
