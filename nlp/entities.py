"""Named entities for Japanese (GiNZA) and English (rules, or en_core_web_sm) in one label vocabulary.

Texts go through ``nlp.pipe`` in batches, because GiNZA costs about 2,500 characters per second
per core and per-call overhead adds up. Texts longer than the model accepts are cut on
paragraph and sentence boundaries and the entity offsets are moved back onto the original text.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict
from spacy.tokens import Doc

from core.errors import InputError
from nlp.chunking import split_text
from nlp.labels import EntityLabel, from_ene, from_ontonotes
from nlp.language import detect_language
from nlp.pipelines import ModelUnavailableError, ginza_available, ner_backend, skipped_components, using

__all__ = [
    "Entity",
    "EntityLabel",
    "ModelUnavailableError",
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
    return [
        Entity(
            text=ent.text,
            label=to_label(ent.label_),
            start=ent.start_char + offset,
            end=ent.end_char + offset,
            lang=lang,
        )
        for ent in doc.ents
    ]


def _dedupe(entities: list[Entity]) -> list[Entity]:
    """Drop exact duplicates (same span and label) and sort by position."""
    unique = {(e.start, e.end, e.label): e for e in entities}
    return sorted(unique.values(), key=lambda e: (e.start, e.end, e.label))
