"""``magi kb ingest DIR``: a user's own documents (HTML, Markdown, text, PDF) into the knowledge base.

Each file becomes one Markdown document with front matter in the ingest folder (``advisor.kb_dir``,
default ``<data_dir>/advisor/kb``), its sections taken from the file's headings (Markdown ``#``
lines; HTML and PDF text as one section per page or per block of paragraphs). Files of other types
are skipped and counted.

The folder is read like a research corpus (scrapers/search/corpus_files.py), since what lands here is
served to every advisor client: only regular files inside the folder (a link leading out, a FIFO, a
device is skipped), text that is not binary (an ELF named ``.txt`` is skipped), PDFs that start like
one, sizes and counts bounded. The source shown with a chunk is ``user-document:<folder>/<file>``,
never a path of the server; each file gets its own document (``a.md`` and ``a.txt`` both stay).

A file that cannot be read (a PDF with a filter or encryption the reader does not support, an HTML
page with almost no text) is skipped and counted by reason, never the end of the ingest. Every
document is prepared first and the knowledge base is written at the end in one step
(:func:`commit`): a failure leaves it as it was, with none of this folder's documents.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from advisor.kb.documents import parse
from advisor.settings import AdvisorSettings
from core.errors import InputError, MagiError, first_line
from core.files import atomic_write_text
from core.settings import Settings
from scrapers.search.corpus_files import CorpusLimits, CorpusReadError, Deadline, read_regular, scan

SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm", ".pdf"})
MAX_FILE_BYTES = 20_000_000
LIMITS = CorpusLimits(max_file_bytes=MAX_FILE_BYTES, max_files=5_000, budget_s=120.0, max_total_bytes=500_000_000)
SOURCE_SCHEME = "user-document:"
log = logging.getLogger(__name__)


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


def _text_of(path: Path, root: Path, source: str) -> tuple[str, list[tuple[str, str]]]:
    """(title, sections) of one file, read without following it out of the folder; CorpusReadError
    names why a file is left out."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from pypdf import PdfReader
        from pypdf.errors import DependencyError, PyPdfError

        raw = read_regular(path, MAX_FILE_BYTES, binary=True, inside=root)
        if not raw.startswith(b"%PDF-"):
            raise CorpusReadError(path, "binary")
        try:
            reader = PdfReader(io.BytesIO(raw))
            pages = [(f"{n}ページ", (p.extract_text() or "").strip()) for n, p in enumerate(reader.pages, start=1)]
        except (PyPdfError, DependencyError, NotImplementedError) as exc:  # an encryption or a filter it lacks
            log.warning("kb ingest: %s skipped: %s", path.name, first_line(exc))
            raise CorpusReadError(path, "unsupported_pdf") from exc
        except Exception as exc:  # a malformed PDF can fail anywhere in the reader; it is one file, skipped
            log.warning("kb ingest: %s skipped: %s: %s", path.name, type(exc).__name__, first_line(exc))
            raise CorpusReadError(path, "unreadable") from exc
        return path.stem, [(t, b) for t, b in pages if b]
    raw = read_regular(path, MAX_FILE_BYTES, inside=root)
    if suffix in (".html", ".htm"):
        from scrapers.errors import ExtractionError
        from scrapers.extract import extract_page

        try:
            page = extract_page(raw, url=source)
        except ExtractionError as exc:  # a page with next to no text
            raise CorpusReadError(path, "no_text") from exc
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
    root = Path(os.path.realpath(source))
    target = ingest_folder(settings)
    report = IngestReport(folder=str(target))
    skipped: Counter[str] = Counter()
    prepared: dict[Path, str] = {}
    for path, _ in scan(root, None, LIMITS, Deadline(root, LIMITS.budget_s), skipped):
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            skipped[suffix or "(none)"] += 1
            continue
        relative = path.relative_to(root).as_posix()
        source_label = f"{SOURCE_SCHEME}{root.name}/{relative}"
        try:
            title, sections = _text_of(path, root, source_label)
        except CorpusReadError as exc:
            skipped[exc.reason] += 1
            continue
        if not sections:
            skipped["no_text"] += 1
            continue
        out = target / f"user_{_document_name(relative)}.md"
        text = _render(title, category, source_label, sections)
        report.chunks += len(parse(text, out))  # checked before anything is written
        prepared[out] = text
    commit(target, prepared)
    report.written = [str(out) for out in prepared]
    report.skipped = dict(sorted(skipped.items()))
    return report


class KnowledgeBaseWriteError(MagiError):
    """The knowledge base could not be written; nothing of this ingest was kept."""


def commit(target: Path, documents: dict[Path, str]) -> None:
    """Write ``documents`` into ``target`` all or none: each is staged next to its place first, then
    they replace what was there; a failure on the way puts back every file as it was."""
    try:
        _commit(target, documents)
    except OSError as exc:
        raise KnowledgeBaseWriteError(
            f"could not write the knowledge base in {target} ({exc.strerror or exc}: {exc.filename}); "
            "nothing was changed: free the folder (space, permissions) and ingest again"
        ) from exc


def _commit(target: Path, documents: dict[Path, str]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".ingest-", dir=target))
    try:
        staged: dict[Path, Path] = {}
        for number, (out, text) in enumerate(documents.items()):
            staged[out] = staging / f"{number}.new"
            atomic_write_text(staged[out], text)
        replaced: list[tuple[Path, Path | None]] = []  # (document, its earlier version kept in staging)
        try:
            for number, (out, new) in enumerate(staged.items()):
                earlier = staging / f"{number}.old" if out.exists() else None
                if earlier is not None:
                    os.replace(out, earlier)
                replaced.append((out, earlier))
                os.replace(new, out)
        except BaseException:
            for out, earlier in reversed(replaced):
                if earlier is not None:
                    os.replace(earlier, out)
                else:
                    out.unlink(missing_ok=True)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _document_name(relative: str) -> str:
    """A file name for the document of ``relative`` (suffix kept: ``a.md`` and ``a.txt`` are two
    documents); a name that had to be shortened or changed gets a digest, so two files never share one."""
    name = re.sub(r"[^A-Za-z0-9-]+", "_", relative)
    if len(name) > 80 or not re.fullmatch(r"[A-Za-z0-9-]+\.[A-Za-z0-9]+", relative):  # not one-to-one
        name = f"{name[:70]}-{hashlib.sha256(relative.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return name


__all__ = [
    "MAX_FILE_BYTES",
    "SOURCE_SCHEME",
    "SUFFIXES",
    "IngestReport",
    "KnowledgeBaseWriteError",
    "commit",
    "ingest",
    "ingest_folder",
]
