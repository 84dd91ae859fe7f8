"""Routing rules on the issue's examples, the documented conflict rule, abstention and policy errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.resources import data_path
from router.route import Router
from router.rules import load_rules
from router.text import normalise, tokenize, typo_of


@pytest.fixture(scope="module")
def router() -> Router:
    return Router()


def test_the_question_word_decides_a_conflict(router: Router) -> None:
    result = router.route("Wi-Fiは何時まで使えますか")
    assert (result.agent, result.category, result.request_type) == ("BusinessInfoAgent", "facility-info", "hours")
    assert "question word decides" in result.debug_info.classification.reason
    english = router.route("Until what time can I use the Wi-Fi?")
    assert english.request_type == "hours"


def test_basement_meeting_room_and_a_bare_meeting_room(router: Router) -> None:
    basement = router.route("地下の会議室")
    assert (basement.agent, basement.request_type) == ("FacilityAgent", "basement")
    bare = router.route("会議室")
    assert (bare.agent, bare.category, bare.request_type) == (
        "ClarificationAgent",
        "meeting-room-clarification-needed",
        None,
    )
    floor = router.route("2階の会議室を使いたい")
    assert (floor.agent, floor.request_type) == ("FacilityAgent", "meeting-room")


@pytest.mark.parametrize("query", ["Is the space open before 6pm?", "Before I go, what time do you close?"])
def test_before_a_time_is_not_a_memory_question(router: Router, query: str) -> None:
    result = router.route(query)
    assert result.agent == "BusinessInfoAgent" and result.request_type == "hours"


def test_a_topic_excludes_memory(router: Router) -> None:
    result = router.route("料金について前に聞いたけど…")
    assert (result.agent, result.request_type) == ("BusinessInfoAgent", "price")
    assert result.debug_info.classification.memory_score >= 1.0  # the cues were there: the topic excluded them


@pytest.mark.parametrize("query", ["さっき何を聞いたか覚えてる？", "What did I ask you earlier?", "会話の履歴を見せて"])
def test_memory_questions(router: Router, query: str) -> None:
    result = router.route(query)
    assert (result.agent, result.category, result.request_type) == ("MemoryAgent", "memory", None)


@pytest.mark.parametrize(
    "query", ["土曜日は開いてる？", "日曜日は？", "平日も同じですか？", "それは土日も同じ？", "what about Saturday?"]
)
def test_follow_ups_inherit_the_previous_request_type(router: Router, query: str) -> None:
    result = router.route(query, previous_request_type="hours")
    assert (result.agent, result.request_type) == ("BusinessInfoAgent", "hours")


def test_follow_up_inherits_a_type_that_is_not_hours(router: Router) -> None:
    assert router.route("日曜日は？", previous_request_type="price").request_type == "price"
    inherited = router.route("what about weekends?", previous_request_type="basement")
    assert (inherited.agent, inherited.request_type) == ("FacilityAgent", "basement")
    assert inherited.debug_info.classification.inherited


def test_a_new_topic_is_not_a_follow_up(router: Router) -> None:
    result = router.route("明日の天気は？", previous_request_type="hours")
    assert (result.agent, result.request_type) == ("GeneralKnowledgeAgent", None)


def test_a_follow_up_without_context_abstains(router: Router) -> None:
    result = router.route("日曜日は？", previous_request_type=None)
    assert result.agent == "GeneralKnowledgeAgent" and result.debug_info.classification.abstained
    assert result.confidence < 0.5


def test_abstention_threshold_is_configurable(router: Router) -> None:
    strict = Router(router.rules, confidence_threshold=0.8)
    typo = strict.route("whats the adress?")  # found through a typo: confidence 0.75
    assert typo.debug_info.classification.fuzzy and typo.agent == "ClarificationAgent"
    assert typo.debug_info.classification.abstained
    plain = strict.route("What's the address?")
    assert plain.agent == "BusinessInfoAgent" and not plain.debug_info.classification.abstained


def test_ambiguous_and_named_cafes(router: Router) -> None:
    assert router.route("カフェの営業時間は？").category == "cafe-clarification-needed"
    saino = router.route("Sainoの営業時間は？")
    assert (saino.agent, saino.category, saino.request_type) == ("BusinessInfoAgent", "saino-cafe", "hours")
    assert router.route("エンジニアカフェの営業時間を教えてください").category == "facility-info"


def test_tokens_not_substrings(router: Router) -> None:
    """ネット is a Wi-Fi word, but ネットワーキング does not contain it."""
    assert router.route("ネットワーキングイベントはありますか").agent == "EventAgent"
    assert router.route("ネットは使えますか").request_type == "wifi"


def test_width_and_case_are_folded(router: Router) -> None:
    assert normalise("ＷｉーＦｉ") == normalise("Ｗｉ－Ｆｉ") == "wi-fi"
    assert router.route("ｴﾝｼﾞﾆｱｶﾌｪの場所").request_type == "location"
    assert router.route("WHAT ARE THE OPENING HOURS").request_type == "hours"
    assert next(t.lemma for t in tokenize(normalise("開いてる"))) == "開く"


def test_time_and_language(router: Router) -> None:
    now = router.route("今何時？")
    assert (now.agent, now.category) == ("TimeAgent", "current-time")
    assert router.route("今何時まで開いてる？").request_type == "hours"
    mixed = router.route("Engineer Cafeのwifiは何時まで？")
    assert mixed.language == "ja" and mixed.debug_info.language_detection.is_mixed
    assert router.route("What time does エンジニアカフェ close?").language == "en"
    unreadable = router.route("？？？")
    assert unreadable.language == "ja" and unreadable.debug_info.language_detection.failed


def test_result_is_camel_case(router: Router) -> None:
    body = router.route("料金はいくら？").model_dump(mode="json", by_alias=True)
    assert set(body) == {"agent", "category", "requestType", "language", "confidence", "debugInfo"}
    assert set(body["debugInfo"]) == {"languageDetection", "classification"}
    assert body["debugInfo"]["languageDetection"]["detectedLanguage"] == "ja"


def _copy_rules(tmp_path: Path) -> Path:
    target = tmp_path / "router"
    target.mkdir()
    for path in data_path("router").glob("*.yaml"):
        (target / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    return target


def test_policy_errors_name_file_line_and_key(tmp_path: Path) -> None:
    folder = _copy_rules(tmp_path)
    path = folder / "followups.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("'^土曜[日]?[はも]'", "'^土曜[日'"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_rules(folder)
    message = str(caught.value)
    assert "followups.yaml" in message and "line " in message and "patterns" in message
    assert "not a valid regular expression" in message


def test_unknown_agent_in_mapping_is_refused(tmp_path: Path) -> None:
    folder = _copy_rules(tmp_path)
    path = folder / "agents.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace("memory: MemoryAgent", "memory: RememberAgent"), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"agents.yaml.*RememberAgent"):
        load_rules(folder)


def test_context_inheritance_is_logged_as_the_spec_says(router: Router, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="router.route"):
        router.route("平日も同じですか？", previous_request_type="hours")
    assert "[RouterAgent] Context inheritance: 平日も同じですか？ -> hours" in caplog.text


def test_the_typo_index_finds_what_comparing_every_term_finds() -> None:
    """Each slip of each Latin keyword (letter missed, doubled, swapped, wrong) is looked up through
    the index and compared with checking :func:`typo_of` against every term of the set."""
    rules = load_rules()
    terms = rules.topic_vocabulary
    latin = [t for t in terms if t.latin[0]]
    words = set()
    for t in latin:
        w = t.parts[0]
        for i in range(len(w)):
            words |= {w[:i] + w[i + 1 :], w[:i] + w[i] + w[i:], w[:i] + "x" + w[i + 1 :]}
            if i + 1 < len(w):
                words.add(w[:i] + w[i + 1] + w[i] + w[i + 2 :])
    assert len(words) > 500
    for word in sorted(words):
        tokens = tokenize(word)
        if len(tokens) != 1 or not tokens[0].latin or tokens[0].surface != word:
            continue
        token = tokens[0]
        found = {t for t in terms.starting_at(token, fuzzy=True) if typo_of(word, t.parts[0])}
        assert found == {t for t in latin if typo_of(word, t.parts[0])}, word
