"""Named entities for Japanese (GiNZA) and English (rules, or en_core_web_sm) in one label vocabulary.

Texts go through ``nlp.pipe`` in batches, because GiNZA costs about 2,500 characters per second
per core and per-call overhead adds up. Texts longer than the model accepts are cut on
paragraph and sentence boundaries and the entity offsets are moved back onto the original text.

GiNZA often leaves the era name out of a Japanese date (「令和6年9月」 comes back as DATE 「6年9月」)
and misses 「令和元年」 entirely; :func:`attach_era_names` widens or adds those DATE spans.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from core.errors import InputError
from nlp.chunking import split_text
from nlp.dates import ERA_DATE
from nlp.labels import EntityLabel, from_ene, from_ontonotes
from nlp.language import detect_language
from nlp.pipelines import ModelUnavailableError, ginza_available, ner_backend, skipped_components, using

if TYPE_CHECKING:
    from spacy.tokens import Doc

__all__ = [
    "Entity",
    "EntityLabel",
    "ModelUnavailableError",
    "attach_era_names",
    "extract_entities",
    "extract_entities_batch",
    "ginza_available",
    "ner_backend",
]

# Sudachi rejects more than 49,149 UTF-8 bytes; stay well under. English has no such limit, but
# spaCy's default max_length is 1,000,000 characters and huge docs cost memory.
MAX_CHUNK_BYTES = {"ja": 40_000, "en": 200_000}
LANGS = ("ja", "en", "other")


class Entity(BaseModel):
    """One entity mention; ``text == source[start:end]`` on the text it came from."""

    model_config = ConfigDict(frozen=True)

    text: str
    label: EntityLabel
    start: int
    end: int
    lang: str


def extract_entities(text: str, lang: str | None = None) -> list[Entity]:
    """Entities of one text; ``lang`` (``ja``/``en``/``other``) is detected when None."""
    return extract_entities_batch([text], lang=lang)[0]


def extract_entities_batch(texts: list[str], lang: str | None = None, batch_size: int = 64) -> list[list[Entity]]:
    """Entities of many texts, one list per text, sorted by position; ``other`` texts get none."""
    if lang is not None and lang not in LANGS:
        raise InputError(f"unsupported language {lang!r} for entity extraction; use one of {', '.join(LANGS)}")
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    # (text index, chunk offset, chunk) per language, so that each pipeline sees one stream.
    jobs: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for i, text in enumerate(texts):
        text_lang = lang or detect_language(text)
        if text_lang == "other" or not text.strip():
            continue
        for offset, chunk in split_text(text, MAX_CHUNK_BYTES[text_lang]):
            if chunk.strip():
                jobs[text_lang].append((i, offset, chunk))

    results: list[list[Entity]] = [[] for _ in texts]
    for job_lang, chunks in jobs.items():
        with using(job_lang) as nlp:
            docs = nlp.pipe((c for _, _, c in chunks), batch_size=batch_size, disable=skipped_components(nlp))
            for (i, offset, _), doc in zip(chunks, docs, strict=True):
                results[i].extend(_entities(doc, offset, job_lang))
    return [_dedupe(found) for found in results]


def _entities(doc: Doc, offset: int, lang: str) -> list[Entity]:
    to_label = from_ene if lang == "ja" else from_ontonotes
    spans = [(ent.start_char, ent.end_char, to_label(ent.label_)) for ent in doc.ents]
    if lang == "ja":
        spans = attach_era_names(doc.text, spans)
    return [
        Entity(text=doc.text[start:end], label=label, start=start + offset, end=end + offset, lang=lang)
        for start, end, label in spans
        if not LIST_MARKER.fullmatch(doc.text[start:end])
    ]


_Span = tuple[int, int, EntityLabel]
LIST_MARKER = re.compile(r"\s*(?:\d{1,2}|[a-zA-Z])[.)．）]\s*")  # "1." numbering a list is not a quantity


def attach_era_names(text: str, spans: list[_Span]) -> list[_Span]:
    """Make every era date (令和6年9月, 平成31年, 令和元年度) one DATE span that starts at the era name.

    A DATE span that overlaps the era date is widened to start at the era name (and keeps its own
    end: 「6年9月30日時点」 becomes 「令和6年9月30日時点」); smaller entities inside the era date
    are replaced; an era date without any DATE span (GiNZA misses 「令和元年」) gets one. An entity
    that reaches outside the era date and is not a DATE is left alone, and so is the era date.
    """
    out = list(spans)
    for m in ERA_DATE.finditer(text):
        overlapping = [sp for sp in out if sp[0] < m.end() and sp[1] > m.start()]
        dates = [sp for sp in overlapping if sp[2] == "DATE"]
        if any(sp[2] != "DATE" and (sp[0] < m.start() or sp[1] > m.end()) for sp in overlapping):
            continue
        start = min([m.start(), *(sp[0] for sp in dates)])
        end = max([m.end(), *(sp[1] for sp in dates)])
        out = [sp for sp in out if sp not in overlapping] + [(start, end, "DATE")]
    return sorted(out)


def _dedupe(entities: list[Entity]) -> list[Entity]:
    """Drop exact duplicates (same span and label) and sort by position."""
    unique = {(e.start, e.end, e.label): e for e in entities}
    return sorted(unique.values(), key=lambda e: (e.start, e.end, e.label))
