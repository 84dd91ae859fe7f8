"""Knowledge-base documents: Markdown with YAML front matter, one chunk per ``## `` section.

Front matter keys: ``document`` (title), ``category`` (law, guideline, case_study,
calculation_formula), ``law`` or ``guideline`` (short name), ``source`` (public URL). A line
``出典: URL`` inside a section gives that section its own source. Sections longer than
``MAX_CHUNK_CHARS`` are split at blank lines. A malformed file is a ConfigError naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ConfigError

Category = Literal["law", "guideline", "case_study", "calculation_formula"]
CATEGORIES: tuple[str, ...] = ("law", "guideline", "case_study", "calculation_formula")
MAX_CHUNK_CHARS = 900
_SOURCE_LINE = re.compile(r"^出典[:：]\s*(\S+)\s*$", re.MULTILINE)


class FrontMatter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document: str = Field(min_length=1)
    category: Category
    law: str | None = None
    guideline: str | None = None
    source: str = Field(min_length=1)


class Chunk(BaseModel):
    """One retrievable passage and where it comes from."""

    id: str
    content: str
    document: str
    section: str
    category: Category
    law: str | None = None
    guideline: str | None = None
    source: str
    path: str


def _split(text: str) -> list[str]:
    if len(text) <= MAX_CHUNK_CHARS:
        return [text]
    parts, current = [], ""
    for para in re.split(r"\n\s*\n", text):
        if current and len(current) + len(para) > MAX_CHUNK_CHARS:
            parts.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    return [*parts, current] if current else parts


def parse(text: str, path: Path) -> list[Chunk]:
    """The chunks of one document; ConfigError naming the file when its front matter is wrong."""
    if not text.startswith("---\n"):
        raise ConfigError(
            f"knowledge-base file {path}: no front matter; start it with '---' and the keys document, category, source"
        )
    head, sep, body = text[4:].partition("\n---\n")
    if not sep:
        raise ConfigError(f"knowledge-base file {path}: the front matter is not closed by a '---' line")
    try:
        meta = FrontMatter.model_validate(yaml.safe_load(head) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"knowledge-base file {path}: bad front matter: {str(exc).splitlines()[0:3]}") from None
    chunks: list[Chunk] = []
    sections = re.split(r"^## +(.+)$", body, flags=re.MULTILINE)
    intro, pairs = sections[0].strip(), list(zip(sections[1::2], sections[2::2], strict=True))
    if intro:
        pairs.insert(0, (meta.document, intro))
    for number, (title, raw) in enumerate(pairs, start=1):
        found = _SOURCE_LINE.search(raw)
        source = found.group(1) if found else meta.source
        content = _SOURCE_LINE.sub("", raw).strip()
        for part_no, part in enumerate(_split(content), start=1):
            chunks.append(
                Chunk(
                    id=f"{path.stem}#{number}" + (f".{part_no}" if part_no > 1 else ""),
                    content=part,
                    document=meta.document,
                    section=title.strip(),
                    category=meta.category,
                    law=meta.law,
                    guideline=meta.guideline,
                    source=source,
                    path=str(path),
                )
            )
    return chunks


def load_folder(folder: Path) -> list[Chunk]:
    """Chunks of every ``*.md`` document in ``folder`` (README.md excepted), sorted by file name."""
    chunks: list[Chunk] = []
    if not folder.is_dir():
        return chunks
    for path in sorted(folder.glob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        chunks.extend(parse(path.read_text(encoding="utf-8"), path))
    return chunks


__all__ = ["CATEGORIES", "MAX_CHUNK_CHARS", "Category", "Chunk", "FrontMatter", "load_folder", "parse"]
