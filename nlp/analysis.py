"""Analysis of one page's text: entities and claim candidates, done once per content.

Only spans that can hold a claim (numbers, dates, money, names) reach GiNZA: the model is the
bottleneck of research, so the cheap pre-filter runs first. Results are keyed by a hash of the
language and text, so the same content is never analysed twice, and of the analyser itself
(:data:`ANALYSER_VERSION` and the rule files it reads): editing the claim vocabulary or the entity
patterns, or a new version of the code, makes cached analyses miss instead of serving stale claims.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from functools import cache
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from nlp.claims import VOCABULARY_PATH, Claim, candidate_spans, extract_claims
from nlp.dependency_claims import RULES_PATH, add_parsed_claims
from nlp.entities import Entity, extract_entities_batch
from nlp.language import detect_language
from nlp.pipelines import EN_RULES_PATH

ANALYSER_VERSION = 4  # raise when a code change alters what an analysis contains


class AnalysisInput(NamedTuple):
    """One text to analyse; ``published`` dates figures that name a month but no year."""

    text: str
    lang: str | None = None
    published: date | None = None


class TextAnalysis(BaseModel):
    content_hash: str
    lang: str
    chars: int  # characters of the text
    analysed_chars: int  # characters that went through the NER model
    entities: list[Entity]
    claims: list[Claim]


def fingerprint(version: int, rule_files: Sequence[Path]) -> str:
    """A short hash of an analyser version and the contents of its rule files."""
    digest = hashlib.sha256(str(version).encode())
    for path in rule_files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@cache
def analyser_fingerprint() -> str:
    """This analyser's fingerprint (the rule files are read once per process)."""
    return fingerprint(ANALYSER_VERSION, (VOCABULARY_PATH, EN_RULES_PATH, RULES_PATH))


def analysis_key(text: str, lang: str, published: date | None = None) -> str:
    return hashlib.sha256(f"{analyser_fingerprint()}\0{lang}\0{published}\0{text}".encode()).hexdigest()


def resolve_lang(text: str, lang: str | None) -> str:
    return lang if lang in ("ja", "en") else detect_language(text)


def analyse_texts(raw_items: Sequence[tuple[str, str | None] | AnalysisInput]) -> list[TextAnalysis]:
    """Analyse texts; one batched NER pass per language, over the spans that can hold claims."""
    items = [AnalysisInput(*item) for item in raw_items]
    langs = [resolve_lang(item.text, item.lang) for item in items]
    spans = [candidate_spans(i.text) if lang in ("ja", "en") else [] for i, lang in zip(items, langs, strict=True)]
    entities: list[list[Entity]] = [[] for _ in items]
    by_lang: dict[str, list[tuple[int, int]]] = defaultdict(list)  # lang -> (item index, span start)
    pieces: dict[str, list[str]] = defaultdict(list)
    for i, (item, lang) in enumerate(zip(items, langs, strict=True)):
        for start, end in spans[i]:
            by_lang[lang].append((i, start))
            pieces[lang].append(item.text[start:end])
    for lang, refs in by_lang.items():
        for (i, offset), found in zip(refs, extract_entities_batch(pieces[lang], lang=lang), strict=True):
            entities[i].extend(e.model_copy(update={"start": e.start + offset, "end": e.end + offset}) for e in found)
    claims = add_parsed_claims(
        [
            (
                item.text,
                lang,
                extract_claims(item.text, entities[i], lang, reference_date=item.published)
                if lang in ("ja", "en")
                else [],
            )
            for i, (item, lang) in enumerate(zip(items, langs, strict=True))
        ]
    )
    return [
        TextAnalysis(
            content_hash=analysis_key(item.text, lang, item.published),
            lang=lang,
            chars=len(item.text),
            analysed_chars=sum(end - start for start, end in spans[i]),
            entities=entities[i],
            claims=claims[i],
        )
        for i, (item, lang) in enumerate(zip(items, langs, strict=True))
    ]


__all__ = [
    "ANALYSER_VERSION",
    "AnalysisInput",
    "TextAnalysis",
    "analyse_texts",
    "analyser_fingerprint",
    "analysis_key",
    "fingerprint",
    "resolve_lang",
]
