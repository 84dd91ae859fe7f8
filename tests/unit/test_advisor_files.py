"""generate_chart and generate_document on real output: the PNG and the documents opened again."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from docx import Document
from matplotlib import image as mpimg
from openpyxl import load_workbook
from pypdf import PdfReader

from advisor.tools.base import ToolContext
from advisor.tools.chart import FORECAST_LABEL, ChartInput
from advisor.tools.chart import run as chart
from advisor.tools.cost import CostImpactInput
from advisor.tools.cost import run as cost
from advisor.tools.document import DocumentInput
from advisor.tools.document import run as document
from core.errors import InputError
from core.settings import load_settings

SERIES = [{"date": "2021-01", "value": 100}, {"date": "2022-01", "value": 115}, {"date": "2023-01", "value": 145}]


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(load_settings(None, {"data_dir": str(tmp_path)}), session_id="sess-1")


@pytest.mark.parametrize("kind", ["line", "bar", "forecast"])
async def test_the_png_has_the_size_and_is_not_blank(tmp_path: Path, kind: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph warning would fail here
        out = await chart(
            ChartInput.model_validate(
                {
                    "data": {"time_series": SERIES},
                    "chart_type": kind,
                    "title": "ステンレス価格指数の推移",
                    "y_label": "指数",
                }
            ),
            context(tmp_path),
        )
    png = (tmp_path / "artifacts" / out.key).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = mpimg.imread(io.BytesIO(png), format="png")
    assert pixels.shape[:2] == (600, 800) == (out.image_size.height, out.image_size.width)
    assert pixels[..., :3].std() > 0.05  # lines, text and axes, not one colour
    assert (pixels[..., :3] < 0.5).mean() > 0.002  # dark pixels: the text and the axes
    assert "+45.0%" in out.summary
    if kind == "forecast":
        assert "予測" in out.summary


async def test_a_comparison_chart_and_bad_input(tmp_path: Path) -> None:
    out = await chart(
        ChartInput.model_validate(
            {
                "data": {
                    "series": {
                        "原材料費": SERIES,
                        "販売価格": [{"date": "2021-01", "value": 100}, {"date": "2023-01", "value": 104}],
                    }
                },
                "chart_type": "comparison",
                "title": "コストと価格の比較",
            }
        ),
        context(tmp_path),
    )
    assert out.files[0].type == "graph"
    with pytest.raises(ValueError, match="at least 2 points"):
        ChartInput.model_validate({"data": {"time_series": SERIES[:1]}, "chart_type": "forecast", "title": "x"})
    assert FORECAST_LABEL.startswith("予測")


@pytest.mark.parametrize("fmt", ["pdf", "docx", "xlsx"])
async def test_documents_open_again_with_their_japanese_text(tmp_path: Path, fmt: str) -> None:
    ctx = context(tmp_path)
    drawn = await chart(
        ChartInput.model_validate(
            {"data": {"time_series": SERIES}, "chart_type": "line", "title": "推移", "audience": "external"}
        ),
        ctx,
    )
    calc = await cost(
        CostImpactInput.model_validate(
            {
                "current_cost_structure": {"材料費": {"amount": 600}, "労務費": {"amount": 400}},
                "price_changes": {"材料費": 0.1},
                "current_price": 1200,
            }
        ),
        ctx,
    )
    ctx.earlier.append({"tool": "calculate_cost_impact", "output": calc.model_dump(mode="json")})
    out = await document(
        DocumentInput.model_validate(
            {
                "document_type": "request_letter",
                "tone": "formal",
                "format": fmt,
                "data": {
                    "recipient": "株式会社A 購買部 御中",
                    "sender": "山田製作所",
                    "fields": {"increase_rate": "6%", "effective_date": "2027年1月1日", "reply_by": "12月15日"},
                    "body": ["ステンレス価格指数は3年で45%上昇しました。"],
                },
                "attachments": [drawn.key],
                "include_cost_table": True,
            }
        ),
        ctx,
    )
    blob = (tmp_path / "artifacts" / out.key).read_bytes()
    if fmt == "pdf":
        reader = PdfReader(io.BytesIO(blob))
        text = "".join(page.extract_text() for page in reader.pages)
        embedded = []
        for page in reader.pages:
            for ref in (page["/Resources"].get("/Font") or {}).values():
                font = ref.get_object()
                descriptor = font["/DescendantFonts"][0].get_object()["/FontDescriptor"].get_object()
                embedded.append((str(font["/BaseFont"]), "/FontFile2" in descriptor))
        assert embedded and all(ok for _, ok in embedded) and "IPAex" in embedded[0][0]  # a TrueType subset
        assert any(page["/Resources"].get("/XObject") for page in reader.pages)  # the chart
    elif fmt == "docx":
        doc = Document(io.BytesIO(blob))
        text = "\n".join(p.text for p in doc.paragraphs) + "\n".join(
            c.text for t in doc.tables for r in t.rows for c in r.cells
        )
        assert doc.inline_shapes and len(doc.inline_shapes) == 1
    else:
        sheet = load_workbook(io.BytesIO(blob)).active
        assert sheet is not None
        text = "\n".join(str(c.value) for row in sheet.iter_rows() for c in row if c.value is not None)
        assert len(sheet._images) == 1  # type: ignore[attr-defined]
    for expected in ("価格改定のお願い", "拝啓", "株式会社A", "2027年1月1日", "45%上昇", "労務費", "660円", "+10%"):
        assert expected in text, (expected, text[:300])
    assert out.preview.startswith("拝啓")


async def test_a_document_may_only_embed_this_sessions_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="attachments"):
        await document(
            DocumentInput.model_validate({"document_type": "quotation", "attachments": ["advisor/other/x.png"]}),
            context(tmp_path),
        )
