"""``generate_document``: quotation, request letter, negotiation materials, agreement or cost breakdown
as docx, xlsx or PDF, from a template and tone in ``data/advisor/templates/``.

The model writes the content (``data.body`` paragraphs, fields for the template's placeholders);
the tool lays it out. Charts generated earlier in the session (``attachments``: their artifact keys)
and tables (``data.tables``, or the session's latest cost calculation with ``include_cost_table``)
are embedded. PDFs embed a subset of IPAex Gothic, so the Japanese text is searchable and prints.
"""

from __future__ import annotations

import asyncio
import io
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from advisor.fonts import japanese_font
from advisor.tools.base import GeneratedFile, ToolContext, ToolInput
from advisor.tools.templates import fill, template, tones
from core.errors import InputError

NAME = "generate_document"
FILE_KIND: dict[str, Literal["word", "excel", "pdf"]] = {"docx": "word", "xlsx": "excel", "pdf": "pdf"}


class Item(BaseModel):
    name: str
    quantity: float = 1
    unit: str = "式"
    unit_price: float = Field(ge=0)


class Table(BaseModel):
    title: str = ""
    columns: list[str] = Field(min_length=1)
    rows: list[list[str | float | int]] = Field(default_factory=list)


class DocumentData(BaseModel):
    recipient: str = Field("", description="宛先 (e.g. 株式会社A 購買部 御中).")
    sender: str = Field("", description="差出人.")
    date: str = Field("", description="日付 (default: today).")
    subject: str = Field("", description="件名 (default: the template's title).")
    body: list[str] = Field(
        default_factory=list, description="Paragraphs written for this document (after the template's)."
    )
    fields: dict[str, str] = Field(default_factory=dict, description="Values of the template's {placeholders}.")
    items: list[Item] = Field(default_factory=list, description="Quotation lines.")
    tables: list[Table] = Field(default_factory=list)


class DocumentInput(ToolInput):
    document_type: Literal["quotation", "request_letter", "negotiation_materials", "agreement", "cost_breakdown"]
    tone: Literal["formal", "friendly", "assertive", "urgent"] = "formal"
    format: Literal["docx", "xlsx", "pdf"] = "pdf"
    data: DocumentData = Field(default_factory=DocumentData)
    attachments: list[str] = Field(default_factory=list, description="Artifact keys of this session's charts to embed.")
    include_cost_table: bool = Field(False, description="Embed the session's latest calculate_cost_impact result.")


class DocumentOutput(BaseModel):
    document_url: str
    key: str
    document_format: Literal["docx", "xlsx", "pdf"]
    preview: str
    files: list[GeneratedFile]


class Layout(BaseModel):
    """What every format renders: the same content, three layouts."""

    title: str
    header: list[str]
    paragraphs: list[str]
    tables: list[Table]
    images: list[bytes]


def _yen(value: float) -> str:
    return f"{value:,.0f}"


def _cost_table(result: dict[str, Any]) -> Table:
    rows: list[list[str | float | int]] = [
        [
            str(line["item"]),
            _yen(float(line["current_amount"])),
            f"{float(line['change_rate']):+.1%}",
            _yen(float(line["new_amount"])),
            _yen(float(line["increase"])),
        ]
        for line in result.get("lines", [])
    ]
    rows.append(
        [
            "合計",
            _yen(float(result["current_total_cost"])),
            f"{float(result['cost_increase_rate']):+.2%}",
            _yen(float(result["new_total_cost"])),
            _yen(float(result["cost_increase"])),
        ]
    )
    return Table(
        title="コスト影響試算", columns=["項目", "現在（円）", "変動率", "変動後（円）", "増加額（円）"], rows=rows
    )


def layout(data: DocumentInput, ctx: ToolContext) -> Layout:
    tpl, tone = template(data.document_type), tones()[data.tone]
    d = data.data
    values = {"recipient": d.recipient, "sender": d.sender, **d.fields}
    header = [d.date or date.today().strftime("%Y年%m月%d日")]
    if d.recipient:
        header.append(d.recipient)
    if d.sender:
        header.append(d.sender)
    paragraphs = [fill(tone.opening, values), *(fill(p, values) for p in tpl.body), *d.body, fill(tone.closing, values)]
    tables = list(d.tables)
    if d.items:
        rows: list[list[str | float | int]] = [
            [i.name, f"{i.quantity:g}", i.unit, _yen(i.unit_price), _yen(i.quantity * i.unit_price)] for i in d.items
        ]
        total = sum(i.quantity * i.unit_price for i in d.items)
        rows.append(["合計（税抜）", "", "", "", _yen(total)])
        tables.insert(0, Table(title="明細", columns=["品名", "数量", "単位", "単価（円）", "金額（円）"], rows=rows))
    if data.include_cost_table:
        cost = next((r for r in reversed(ctx.earlier) if r.get("tool") == "calculate_cost_impact"), None)
        if cost is None:
            raise InputError("include_cost_table: this session has no calculate_cost_impact result yet; run it first")
        tables.append(_cost_table(cost["output"]))
    images = []
    for key in data.attachments:
        blob = ctx.earlier_file(key)
        if blob is None:
            raise InputError(f"attachments: {key!r} is not a file of this session; use a key a tool returned")
        if key.endswith(".png"):
            images.append(blob)
    return Layout(title=d.subject or tpl.title, header=header, paragraphs=paragraphs, tables=tables, images=images)


def to_docx(doc: Layout) -> bytes:
    from docx import Document
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.oxml.ns import qn
    from docx.shared import Cm

    out = Document()
    style = out.styles["Normal"]
    style.font.name = "IPAexGothic"
    rpr = style.element.get_or_add_rPr()
    rpr.get_or_add_rFonts().set(qn("w:eastAsia"), "IPAexGothic")
    for line in doc.header:
        out.add_paragraph(line).alignment = WD_ALIGN_PARAGRAPH.RIGHT
    out.add_heading(doc.title, level=1)
    for text in doc.paragraphs:
        out.add_paragraph(text)
    for table in doc.tables:
        if table.title:
            out.add_paragraph(table.title)
        grid = out.add_table(rows=1, cols=len(table.columns))
        grid.style = "Table Grid"
        for cell, name in zip(grid.rows[0].cells, table.columns, strict=True):
            cell.text = name
        for row in table.rows:
            cells = grid.add_row().cells
            for cell, value in zip(cells, row, strict=False):
                cell.text = str(value)
    for image in doc.images:
        out.add_picture(io.BytesIO(image), width=Cm(15))
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def to_xlsx(doc: Layout) -> bytes:
    from openpyxl import Workbook
    from openpyxl.drawing.image import Image
    from openpyxl.styles import Alignment, Font

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = doc.title[:31]
    sheet.column_dimensions["A"].width = 90
    for line in doc.header:
        sheet.append([line])
    sheet.append([doc.title])
    sheet.cell(sheet.max_row, 1).font = Font(bold=True, size=14)
    for text in doc.paragraphs:
        sheet.append([text])
        sheet.cell(sheet.max_row, 1).alignment = Alignment(wrap_text=True)
    for table in doc.tables:
        sheet.append([])
        if table.title:
            sheet.append([table.title])
        sheet.append(list(table.columns))
        for row in table.rows:
            sheet.append(list(row))
    for image in doc.images:
        picture = Image(io.BytesIO(image))
        picture.width, picture.height = 640, 480
        sheet.add_image(picture, f"A{sheet.max_row + 2}")
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def to_pdf(doc: Layout, font: Path) -> bytes:
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.add_font("IPAexG", fname=str(font))
    pdf.add_font("IPAexG", style="B", fname=str(font))  # table headings ask for bold
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    pdf.set_font("IPAexG", size=10)
    for line in doc.header:
        pdf.cell(0, 6, line, align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("IPAexG", size=16)
    pdf.cell(0, 10, doc.title, align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("IPAexG", size=10.5)
    for text in doc.paragraphs:
        pdf.multi_cell(0, 6.5, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    for table in doc.tables:
        pdf.ln(2)
        if table.title:
            pdf.cell(0, 7, table.title, new_x="LMARGIN", new_y="NEXT")
        with pdf.table(text_align="CENTER") as grid:
            head = grid.row()
            for name in table.columns:
                head.cell(name)
            for row in table.rows:
                cells = grid.row()
                for value in row:
                    cells.cell(str(value))
    for image in doc.images:
        pdf.ln(4)
        pdf.image(io.BytesIO(image), w=160)
    return bytes(pdf.output())


RENDERERS = {"docx": to_docx, "xlsx": to_xlsx}


async def run(data: DocumentInput, ctx: ToolContext) -> DocumentOutput:
    doc = layout(data, ctx)
    if data.format == "pdf":  # the only format that needs a font file (a ConfigError saying which, if none)
        blob = await asyncio.to_thread(to_pdf, doc, japanese_font(ctx.section))
    else:
        blob = await asyncio.to_thread(RENDERERS[data.format], doc)
    saved = ctx.save(NAME, data.document_type, data.format, blob, FILE_KIND[data.format])
    preview = "".join(doc.paragraphs)[:160]
    return DocumentOutput(
        document_url=saved.url, key=saved.key, document_format=data.format, preview=preview, files=[saved]
    )


DESCRIPTION = (
    "文書生成: 見積書(quotation)・申入書(request_letter)・交渉資料(negotiation_materials)・合意書(agreement)・"
    "原価内訳書(cost_breakdown)を docx/xlsx/pdf で作成します。tone は formal/friendly/assertive/urgent。"
    "data.body に本文段落、data.fields にテンプレートの差し込み値、attachments にこのセッションのグラフのキー、"
    "include_cost_table=true で直近のコスト試算表を埋め込みます。"
)

__all__ = [
    "DESCRIPTION",
    "NAME",
    "RENDERERS",
    "DocumentData",
    "DocumentInput",
    "DocumentOutput",
    "Item",
    "Layout",
    "Table",
    "layout",
    "run",
    "to_docx",
    "to_pdf",
    "to_xlsx",
]
