"""Entity extraction with the real GiNZA model (loaded once per process) and the English rules."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import spacy
from spacy.language import Language

from core.errors import ConfigError, InputError
from nlp import pipelines
from nlp.chunking import split_text
from nlp.entities import Entity, extract_entities, extract_entities_batch, ginza_available, ner_backend
from nlp.labels import LABELS, from_ene, from_ontonotes

JA = "2024年9月、東京都の中小企業の価格転嫁率は49.7%で、トヨタ自動車は1兆5000億円を投じた。"
EN = (
    "Toyota Motor Corp. said on Nov. 29, 2024 that it will invest $1.2 billion in Fukuoka, "
    "lifting its share of the Japan market to 45.7%, up 3 percentage points from fiscal 2023."
)
JA_SENTENCES = [
    JA,
    "日本銀行の植田和男総裁は10月31日の記者会見で、追加利上げの可能性に言及した。",
    "帝国データバンクによると、大阪府の倒産件数は前年同月比12.3%増の85件だった。",
    "ソニーグループは2025年3月期の営業利益見通しを1兆3100億円に上方修正した。",
    "経済産業省は福岡市で半導体関連の説明会を開き、約300社が参加した。",
]


@pytest.fixture(scope="module")
def ja_nlp() -> Language:
    """The process-wide GiNZA pipeline; loading it once keeps this module fast."""
    return pipelines.load_pipeline("ja")


def spans(entities: list[Entity]) -> set[tuple[str, str]]:
    return {(e.label, e.text) for e in entities}


def assert_offsets(text: str, entities: list[Entity]) -> None:
    assert all(text[e.start : e.end] == e.text for e in entities)
    assert [(e.start, e.end) for e in entities] == sorted((e.start, e.end) for e in entities)


def test_japanese_sentence(ja_nlp: Language) -> None:
    entities = extract_entities(JA)
    assert_offsets(JA, entities)
    expected = {("DATE", "2024年9月"), ("GPE", "東京都"), ("PERCENT", "49.7%"), ("MONEY", "1兆5000億円")}
    assert expected <= spans(entities)
    assert ("ORG", "トヨタ自動車") in spans(entities)
    tokyo = next(e for e in entities if e.text == "東京都")
    assert (tokyo.start, tokyo.end, tokyo.lang) == (8, 11, "ja")


def test_japanese_label_overrides(ja_nlp: Language) -> None:
    found = spans(extract_entities("国際通貨基金（IMF）は見通しを示した。関東地方と九州で大雨が降った。", lang="ja"))
    assert ("ORG", "IMF") in found  # International_Organization: GiNZA's table says NORP
    assert ("GPE", "関東地方") in found  # Domestic_Region -> LOC, folded into GPE


def test_english_sentence() -> None:
    entities = extract_entities(EN)
    assert_offsets(EN, entities)
    assert {
        ("ORG", "Toyota Motor Corp."),
        ("DATE", "Nov. 29, 2024"),
        ("MONEY", "$1.2 billion"),
        ("GPE", "Fukuoka"),
        ("GPE", "Japan"),
        ("PERCENT", "45.7%"),
        ("PERCENT", "3 percentage points"),
        ("DATE", "fiscal 2023"),
    } <= spans(entities)
    assert {e.lang for e in entities} == {"en"}


@pytest.mark.parametrize(
    ("phrase", "label"),
    [
        ("$1.2 billion", "MONEY"),
        ("¥300 million", "MONEY"),
        ("300 million yen", "MONEY"),
        ("USD 5m", "MONEY"),
        ("US$1.2bn", "MONEY"),
        ("5 billion US dollars", "MONEY"),
        ("45.7%", "PERCENT"),
        ("12 percent", "PERCENT"),
        ("3 percentage points", "PERCENT"),
        ("March 2025", "DATE"),
        ("2024-11-29", "DATE"),
        ("FY2024", "DATE"),
        ("fiscal 2023", "DATE"),
        ("Q3 2024", "DATE"),
        ("third quarter of 2024", "DATE"),
        ("5,000 tonnes", "QUANTITY"),
        ("1.2 million", "CARDINAL"),
        ("Bank of Japan", "ORG"),
        ("Japan Post Holdings Co., Ltd.", "ORG"),
        ("Subcontract Act", "LAW"),
        ("Osaka", "GPE"),
    ],
)
def test_english_rules(phrase: str, label: str) -> None:
    text = f"Analysts noted {phrase} in the filing."
    entities = extract_entities(text, lang="en")
    assert_offsets(text, entities)
    assert (label, phrase) in spans(entities)


def test_org_heuristic_does_not_swallow_titles() -> None:
    found = spans(extract_entities("Bank of Japan Governor Kazuo Ueda spoke.", lang="en"))
    assert ("ORG", "Bank of Japan") in found
    assert not any(label == "ORG" and "Governor" in text for label, text in found)


def test_batch_equals_single(ja_nlp: Language) -> None:
    texts = [*JA_SENTENCES, EN, "", "🎉", "서울은 한국의 수도입니다", "Sony Group sold 1.2 million units in 2024."]
    batch = extract_entities_batch(texts, batch_size=2)
    assert batch == [extract_entities(t) for t in texts]
    assert batch[len(JA_SENTENCES) + 1 :][:3] == [[], [], []]
    assert all(e.lang == "ja" for found in batch[: len(JA_SENTENCES)] for e in found)


@pytest.mark.slow
def test_long_japanese_text(ja_nlp: Language) -> None:
    paragraphs = ["".join(JA_SENTENCES[j % len(JA_SENTENCES)] for j in range(i, i + 7)) for i in range(90)]
    text = "\n\n".join(paragraphs)
    assert len(text.encode("utf-8")) > 60_000
    entities = extract_entities(text)
    assert_offsets(text, entities)
    last_paragraph = len(text) - len(paragraphs[-1])
    assert any(e.start >= last_paragraph for e in entities), "entities of the last chunk are missing"
    assert len(entities) == len({(e.start, e.end, e.label) for e in entities})


def test_threads_share_ginza(ja_nlp: Language) -> None:
    results: list[list[Entity]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(extract_entities(JA * 5, lang="ja"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 4 and all(r == results[0] for r in results)


def test_other_language_and_blank_text_give_nothing() -> None:
    assert extract_entities("Привет, мир") == []
    assert extract_entities("Japan", lang="other") == []
    assert extract_entities("   ", lang="en") == []


def test_bad_arguments() -> None:
    with pytest.raises(InputError, match="unsupported language 'de'"):
        extract_entities("Hallo", lang="de")
    with pytest.raises(InputError, match="batch_size"):
        extract_entities_batch(["x"], batch_size=0)


def test_every_ginza_label_maps_into_the_vocabulary(ja_nlp: Language) -> None:
    ner_labels = ja_nlp.get_pipe("ner").labels  # type: ignore[attr-defined]
    assert {from_ene(label) for label in ner_labels} <= LABELS
    assert from_ene("Company") == "ORG"
    assert from_ene("Province") == "GPE"
    assert from_ene("Money_Form") == "OTHER"
    assert from_ene("Unknown_Label") == "OTHER"
    assert [from_ontonotes(x) for x in ("LOC", "TIME", "ORDINAL", "LANGUAGE", "MONEY")] == [
        "GPE",
        "DATE",
        "CARDINAL",
        "OTHER",
        "MONEY",
    ]


def test_en_core_web_sm_gets_the_ruler_before_ner(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_load(name: str, **_: Any) -> Language:
        assert name == "en_core_web_sm"
        nlp = spacy.blank("en")
        nlp.add_pipe("ner")
        return nlp

    monkeypatch.setattr(spacy.util, "is_package", lambda name: name == "en_core_web_sm")
    monkeypatch.setattr(spacy, "load", fake_load)
    nlp = pipelines._load_english()
    assert nlp.pipe_names.index("entity_ruler") < nlp.pipe_names.index("ner")
    assert ner_backend("en").startswith("en_core_web_sm")


def test_missing_ginza_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(name: str, **_: Any) -> Language:
        raise OSError(f"[E050] Can't find model '{name}'")

    monkeypatch.setattr(spacy, "load", fail)
    with pytest.raises(pipelines.ModelUnavailableError, match=r"ja_ginza.*pip install .*ja-ginza"):
        pipelines._load_japanese()


def test_doctor_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    ok, message = ginza_available()
    assert ok and message.startswith("ja_ginza 5.3")
    assert ner_backend("ja").startswith("GiNZA ja_ginza")
    assert "entity_ruler" in ner_backend("en")
    assert ner_backend("other").startswith("none")
    monkeypatch.setattr(spacy.util, "is_package", lambda name: False)
    ok, message = ginza_available()
    assert not ok and "pip install" in message
    assert ner_backend("ja").startswith("unavailable")


def test_bad_rule_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read entity rules"):
        pipelines.load_en_patterns(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\npatterns:\n  COMPANY: [[{LOWER: acme}]]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: line 3, column 3: patterns\.COMPANY: label 'COMPANY' is not"):
        pipelines.load_en_patterns(bad)
    bad.write_text("version: 1\npatterns:\n  ORG: [[{NOT_AN_ATTR: acme}]]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid entity pattern"):
        pipelines.add_entity_ruler(spacy.blank("en"), bad)


def test_split_text_keeps_offsets_and_limits() -> None:
    text = ("東京都の中小企業は価格転嫁を進めた。" * 400 + "\n\n") * 3 + "あ" * 20_000
    chunks = split_text(text, 40_000)
    assert "".join(chunk for _, chunk in chunks) == text
    assert all(len(chunk.encode("utf-8")) <= 40_000 for _, chunk in chunks)
    assert all(text[offset : offset + len(chunk)] == chunk for offset, chunk in chunks)
    assert chunks[1][1].startswith("東京都")  # cut on a paragraph or sentence boundary
    assert split_text("short", 40_000) == [(0, "short")]
