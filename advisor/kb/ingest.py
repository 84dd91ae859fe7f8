"""``magi kb ingest DIR``: a user's own documents (HTML, Markdown, text, PDF) into the knowledge base.

Each file becomes one Markdown document with front matter in the ingest folder (``advisor.kb_dir``,
default ``<data_dir>/advisor/kb``), its sections taken from the file's headings (Markdown ``#``
lines; HTML and PDF text as one section per page or per block of paragraphs). The source is the
file's path unless the caller names a URL. Files of other types are skipped and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from advisor.kb.documents import parse
from advisor.settings import AdvisorSettings
from core.errors import InputError
from core.settings import Settings

SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm", ".pdf"}
MAX_FILE_BYTES = 20_000_000


@dataclass
class IngestReport:
    folder: str
    written: list[str] = field(default_factory=list)
    chunks: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


def ingest_folder(settings: Settings) -> Path:
    """``advisor.kb_dir``, else ``<data_dir>/advisor/kb``."""
    configured = AdvisorSettings.of(settings).kb_dir
    return Path(configured) if configured else Path(settings.data_dir) / "advisor" / "kb"


def _sections_from_markdown(text: str) -> list[tuple[str, str]]:
    parts = re.split(r"^#{1,6} +(.+)$", text, flags=re.MULTILINE)
    sections = [("本文", parts[0].strip())] if parts[0].strip() else []
    sections += [(t.strip(), b.strip()) for t, b in zip(parts[1::2], parts[2::2], strict=True) if b.strip()]
    return sections


def _text_of(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """(title, sections) of one file."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from pypdf import PdfReader

        reader = PdfReader(str(path))
        pages = [(f"{n}ページ", (page.extract_text() or "").strip()) for n, page in enumerate(reader.pages, start=1)]
        return path.stem, [(t, b) for t, b in pages if b]
    raw = path.read_bytes()
    if suffix in (".html", ".htm"):
        from scrapers.extract import extract_page

        page = extract_page(raw, url=path.as_uri())
        blocks = [b.strip() for b in re.split(r"\n\s*\n", page.text) if b.strip()]
        return page.title or path.stem, [(f"{page.title or path.stem} ({n})", b) for n, b in enumerate(blocks, start=1)]
    text = raw.decode("utf-8", errors="replace")
    return path.stem, _sections_from_markdown(text) if suffix in (".md", ".markdown") else [("本文", text.strip())]


def _render(title: str, category: str, source: str, sections: list[tuple[str, str]]) -> str:
    import yaml

    head = yaml.safe_dump(
        {"document": title, "category": category, "source": source}, allow_unicode=True, sort_keys=False
    )
    body = "\n".join(f"## {t}\n{b}\n" for t, b in sections)
    return f"---\n{head}---\n{body}"


def ingest(settings: Settings, source: Path, category: str = "case_study") -> IngestReport:
    """Convert every supported file under ``source`` into the ingest folder; InputError for a bad folder."""
    if not source.is_dir():
        raise InputError(f"magi kb ingest: {source} is not a folder; give the folder that holds your documents")
    if category not in ("law", "guideline", "case_study", "calculation_formula"):
        raise InputError(f"--category {category!r}: use law, guideline, case_study or calculation_formula")
    target = ingest_folder(settings)
    target.mkdir(parents=True, exist_ok=True)
    report = IngestReport(folder=str(target))
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            report.skipped[suffix or "(none)"] = report.skipped.get(suffix or "(none)", 0) + 1
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            report.skipped["too large"] = report.skipped.get("too large", 0) + 1
            continue
        title, sections = _text_of(path)
        if not sections:
            report.skipped["no text"] = report.skipped.get("no text", 0) + 1
            continue
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(path.relative_to(source).with_suffix("")))[:80] or "document"
        out = target / f"user_{name}.md"
        text = _render(title, category, path.resolve().as_uri(), sections)
        report.chunks += len(parse(text, out))  # checked before it is written
        out.write_text(text, encoding="utf-8")
        report.written.append(str(out))
    return report


__all__ = ["MAX_FILE_BYTES", "SUFFIXES", "IngestReport", "ingest", "ingest_folder"]
