"""The files of a research run: ``report.md`` (the final report), ``report.json`` (the result model),
``transparency.json`` and ``transparency.md`` (research/transparency.py), the charts; each written
atomically. A run that failed leaves ``partial.json`` (what it did produce) instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.files import atomic_write_text
from research.charts import write_charts
from research.result import ConsensusResearchResult
from research.transparency import transparency_json, transparency_markdown


def write_outputs(result: ConsensusResearchResult, out_dir: Path) -> tuple[Path, Path]:
    """Write the report, the result JSON and the transparency reports; each appears whole or not at all."""
    atomic_write_text(out_dir / "transparency.json", transparency_json(result) + "\n")
    atomic_write_text(out_dir / "transparency.md", transparency_markdown(result))
    write_charts(result.charts, out_dir)
    md = atomic_write_text(out_dir / "report.md", result.final_report)
    js = atomic_write_text(out_dir / "report.json", result.model_dump_json(by_alias=True, indent=2) + "\n")
    return md, js


def write_partial(partial: dict[str, Any], out_dir: Path) -> Path:
    """What a failed run produced, for debugging (``partial.json``)."""
    return atomic_write_text(out_dir / "partial.json", json.dumps(partial, ensure_ascii=False, indent=2) + "\n")


__all__ = ["write_outputs", "write_partial"]
