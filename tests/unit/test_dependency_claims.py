"""Claims whose subject comes from the parse (nlp.dependency_claims): GiNZA for ja, token rules for en.

Real pipelines throughout: GiNZA parses the Japanese sentences, spaCy's tokenizer the English ones
(``en_core_web_sm`` is used instead when installed; its branch is tested only then).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import spacy

from core.errors import ConfigError
from nlp.analysis import AnalysisInput, analyse_texts
from nlp.claims import Claim
from nlp.conflicts import PARSED_FACTOR, detect_conflicts, sourced
from nlp.dependency_claims import Word, en_parser_installed, load_words, sentence_figures, tree_readings
from research.retrieval import claim_confidence

pytestmark = pytest.mark.skipif(not spacy.util.is_package("ja_ginza"), reason="GiNZA (ja_ginza) is not installed")

Key = tuple[str | None, str | None, tuple[str, ...], bool]


def _claims(sentences: list[str], lang: str) -> list[list[Claim]]:
    return [a.claims for a in analyse_texts([AnalysisInput(s, lang) for s in sentences])]


def _keys(claims: list[Claim]) -> set[Key]:
    return {(c.subject, c.attribute, tuple(v.raw for v in c.values), c.parsed) for c in claims if c.values}


# --- Japanese: GiNZA's dependency parse ------------------------------------------------------------


def test_ja_subject_attribute_and_value_from_the_parse() -> None:
    found = _claims(
        [
            "ログは7日間保存される。",
            "キャッシュの上限が512MBに引き上げられた。",
            "サーバーは最大100件の接続を受け付ける。",
            "このサービスは512MBのメモリを使用する。",
        ],
        "ja",
    )
    assert _keys(found[0]) == {("ログ", "保存", ("7日間",), True)}  # topic は, predicate 保存
    assert _keys(found[1]) == {("キャッシュ", "上限", ("512MB",), True)}  # XのAが: owner and attribute
    assert _keys(found[2]) == {("サーバー", "接続", ("100件",), True)}  # the noun the figure counts
    assert _keys(found[3]) == {("サービス", "メモリ", ("512MB",), True)}  # the noun a size measures
    seven_days = found[0][0].values[0]
    assert (seven_days.value, seven_days.unit) == (7 * 86400, "second")  # normalised as the other shapes do


def test_ja_explicit_shapes_win_and_meet_the_parse_key() -> None:
    """Sentences an explicit shape reads get no parsed claim, and their keys are the ones the parse
    gives: 既定のタイムアウトは30秒です is the timeout's default, as "XのデフォルトはY" reads it;
    このキャッシュの上限は… is XのAは, with the demonstrative dropped like an English article."""
    copula, default, owner, parsed = _claims(
        [
            "既定のタイムアウトは30秒です。",
            "タイムアウトのデフォルト値は30秒です。",
            "このキャッシュの上限は512MBに設定されている。",
            "キャッシュの上限が512MBに引き上げられた。",
        ],
        "ja",
    )
    assert _keys(copula) == _keys(default) == {("タイムアウト", "default", ("30秒",), False)}
    assert _keys(owner) == {("キャッシュ", "上限", ("512MB",), False)}
    assert {(s, a) for s, a, _, _ in _keys(parsed)} == {(s, a) for s, a, _, _ in _keys(owner)}


def test_ja_no_claim_without_a_real_subject() -> None:
    found = _claims(
        [
            "詳細は第3章を参照してください。",  # a reference, not a figure
            "同社は4月に従業員22人の賃金を平均4%上げた。",  # two figures: left to the shapes and vocabulary
            "これは30秒かかる。",  # a pronoun subject
            "1 文字目はパッケージの現在の状態を表す。",  # a position, not a figure
            "中小企業価格動向調査センターは29日、調査の結果を公表した。",  # 29日 is a day of the month
        ],
        "ja",
    )
    assert [c for cs in found for c in cs if c.parsed] == []


# --- English: rule-based finder (en_core_web_sm when installed) ---------------------------------------


EN = [
    "The server keeps 10 backups.",
    "Logs are kept for 7 days.",
    "The daemon uses 512 MB of memory.",
    "By default the cache holds 2000 entries.",
    "Terminals are conventionally 80 columns wide.",
]


@pytest.mark.skipif(en_parser_installed(), reason="en_core_web_sm is installed: the parser branch is used instead")
def test_en_rule_based_subjects() -> None:
    found = _claims(EN, "en")
    assert [_keys(cs) for cs in found] == [
        {("server", "backups", ("10",), True)},  # the noun a bare number counts
        {("logs", "keep", ("7 days",), True)},  # auxiliary, then the content verb's lemma
        {("daemon", "use", ("512 MB",), True)},  # the unitless 512 claim of the sentence is replaced
        {("cache", "hold", ("2000 entries",), True)},  # "By default" stops the noun phrase
        {("terminals", "columns wide", ("80",), True)},
    ]


def test_en_rule_based_leaves_non_facts_alone() -> None:
    found = _claims(
        [
            "See section 5.14 for 20 examples.",  # two figures
            "Python 3.11 is required.",  # a release
            "The upload is not limited to 10 MB.",  # negated
            "It takes 30 seconds.",  # a pronoun subject
            "If the pin priority is 500, nothing changes.",  # a condition, not a fact
            "The patches stored in the 3.0 (quilt) format must be fuzz free.",  # a format name
            "Run 20 jobs",  # not a finished sentence
        ],
        "en",
    )
    assert [c for cs in found for c in cs if c.parsed] == []


@pytest.mark.skipif(not en_parser_installed(), reason="en_core_web_sm is not installed (it is not on PyPI)")
def test_en_parser_subjects() -> None:
    found = _claims(["The server keeps 10 backups.", "Logs are kept for 7 days."], "en")
    assert ("server", "backups", ("10",), True) in _keys(found[0])
    assert any(c.subject == "logs" and c.parsed for c in found[1])


def test_en_tree_walk_on_a_given_parse() -> None:
    """The walk the en_core_web_sm branch takes, on the parse that model gives these sentences (written
    out here because the model is not installed): nsubj / nsubjpass, the counted noun, the verb's lemma."""

    def words(sentence: str, rows: list[tuple[str, str, str, str, int]]) -> list[Word]:
        out, pos = [], 0
        for text, lemma, tag, dep, head in rows:
            start = sentence.index(text, pos)
            out.append(Word(text, lemma, tag, dep, head, start, start + len(text)))
            pos = start + len(text)
        return out

    keeps = "The server keeps 10 backups."
    parse_keeps = [
        ("The", "the", "DET", "det", 1),
        ("server", "server", "NOUN", "nsubj", 2),
        ("keeps", "keep", "VERB", "ROOT", 2),
        ("10", "10", "NUM", "nummod", 4),
        ("backups", "backup", "NOUN", "dobj", 2),
        (".", ".", "PUNCT", "punct", 2),
    ]
    kept = "Rotated logs are kept for 7 days."
    parse_kept = [
        ("Rotated", "rotate", "VERB", "amod", 1),
        ("logs", "log", "NOUN", "nsubjpass", 3),
        ("are", "be", "AUX", "auxpass", 3),
        ("kept", "keep", "VERB", "ROOT", 3),
        ("for", "for", "ADP", "prep", 3),
        ("7", "7", "NUM", "nummod", 6),
        ("days", "day", "NOUN", "pobj", 4),
        (".", ".", "PUNCT", "punct", 3),
    ]
    found = [
        [(s, a, v.raw) for s, a, v, _ in tree_readings(text, words(text, rows), sentence_figures(text), "en")]
        for text, rows in ((keeps, parse_keeps), (kept, parse_kept))
    ]
    assert found == [[("server", "backups", "10")], [("rotated logs", "keep", "7 days")]]


def test_figures_skip_references_and_dates() -> None:
    assert [v.raw for v in sentence_figures("See section 5.14 and version 1.2.3 in 2024.")] == []
    assert [v.raw for v in sentence_figures("ログは7日間保存され、3分の2が圧縮される。")] == ["7日間"]


# --- contradictions and confidence -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "page_a", "page_b", "key"),
    [
        ("ja", "アクセスログは7日間保存される。", "アクセスログは30日間保存される。", ("アクセスログ", "保存")),
        ("en", "The mirror keeps 10 snapshots.", "The mirror keeps 25 snapshots.", ("mirror", "snapshots")),
    ],
)
def test_two_pages_disagreeing_on_a_parsed_key_are_disputed(
    lang: str, page_a: str, page_b: str, key: tuple[str, str]
) -> None:
    a, b = _claims([page_a, page_b], lang)
    items = sourced(a, "https://a.example/manual") + sourced(b, "https://b.example/guide")
    conflicts = detect_conflicts(items)
    assert [(c.subject, c.attribute, c.type) for c in conflicts] == [(*key, "contradiction")]
    assert {conflicts[0].statement1.text, conflicts[0].statement2.text} == {page_a, page_b}


def test_parsed_claims_carry_less_confidence_than_explicit_shapes() -> None:
    parsed = _claims(["ログは7日間保存される。", "ログは30日間保存される。"], "ja")
    explicit = _claims(["ログの保存期間は7日間です。", "ログの保存期間は30日間です。"], "ja")
    assert all(c.parsed for cs in parsed for c in cs) and not any(c.parsed for cs in explicit for c in cs)

    def confidence(pair: list[list[Claim]]) -> float:
        items = sourced(pair[0], "https://a.example/") + sourced(pair[1], "https://b.example/")
        (conflict,) = detect_conflicts(items)
        return conflict.confidence

    assert confidence(parsed) == pytest.approx(confidence(explicit) * PARSED_FACTOR**2, abs=0.01)
    assert claim_confidence(True, True, parsed=True) < claim_confidence(True, True)
    assert claim_confidence(True, True, parsed=True) > claim_confidence(False, True)


def test_bad_word_list_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "dependency_claims.yaml"
    bad.write_text("version: 1\nen:\n  verbs: [keep, 3]\n  verbz: [hold]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"dependency_claims.yaml.*line 4.*verbz.*unknown key"):
        load_words.__wrapped__(bad)
