"""Analysis of one page's text: entities and claim candidates, done once per content.

Only spans that can hold a claim (numbers, dates, money, names) reach GiNZA: the model is the
bottleneck of research, so the cheap pre-filter runs first. Results are keyed by a hash of the
language and text, so the same content is never analysed twice.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from pydantic import BaseModel

from nlp.claims import Claim, candidate_spans, extract_claims
from nlp.entities import Entity, extract_entities_batch
from nlp.language import detect_language


class TextAnalysis(BaseModel):
    content_hash: str
    lang: str
    chars: int  # characters of the text
    analysed_chars: int  # characters that went through the NER model
    entities: list[Entity]
    claims: list[Claim]


def analysis_key(text: str, lang: str) -> str:
    return hashlib.sha256(f"{lang}\0{text}".encode()).hexdigest()


def resolve_lang(text: str, lang: str | None) -> str:
    return lang if lang in ("ja", "en") else detect_language(text)


def analyse_texts(items: list[tuple[str, str | None]]) -> list[TextAnalysis]:
    """Analyse ``(text, lang)`` pairs; one batched NER pass per language over the candidate spans."""
    langs = [resolve_lang(text, lang) for text, lang in items]
    spans = [candidate_spans(text) if lang in ("ja", "en") else [] for (text, _), lang in zip(items, langs, strict=True)]
    entities: list[list[Entity]] = [[] for _ in items]
    by_lang: dict[str, list[tuple[int, int]]] = defaultdict(list)  # lang -> (item index, span start)
    pieces: dict[str, list[str]] = defaultdict(list)
    for i, ((text, _), lang) in enumerate(zip(items, langs, strict=True)):
        for start, end in spans[i]:
            by_lang[lang].append((i, start))
            pieces[lang].append(text[start:end])
    for lang, refs in by_lang.items():
        for (i, offset), found in zip(refs, extract_entities_batch(pieces[lang], lang=lang), strict=True):
            entities[i].extend(e.model_copy(update={"start": e.start + offset, "end": e.end + offset}) for e in found)
    return [
        TextAnalysis(
            content_hash=analysis_key(text, lang), lang=lang, chars=len(text),
            analysed_chars=sum(end - start for start, end in spans[i]),
            entities=entities[i], claims=extract_claims(text, entities[i], lang) if lang in ("ja", "en") else [],
        )
        for i, ((text, _), lang) in enumerate(zip(items, langs, strict=True))
    ]
