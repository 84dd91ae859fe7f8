"""``generate_document``: quotation, request letter, negotiation materials, agreement or cost breakdown
as docx, xlsx or PDF, from a template and tone in ``data/advisor/templates/``.

The model writes the content (``data.body``: the owner's paragraphs, placed where the template's
``{user_text}`` slot is; ``data.fields``: the template's fields, listed in this tool's schema); the
tool lays it out as a Japanese business document: 宛名 on the left, date and sender on the right,
the 件名 centred, 拝啓 … 敬具 for a letter, 記 … 以上 for the particulars. A document with an
unfilled field is refused naming each one; amounts are written 1,234,567円 and rates 12.75%.

Every document has an audience. One for the buyer (external, the templates' default) is refused
when it would carry the owner's internal analysis: an internal word or figure (``advisor.audience``)
or an internal chart as attachment. Any document is refused with an English identifier or a
``{placeholder}`` left in its text. PDFs embed a subset of IPAex Gothic, so the text is searchable.
"""

from __future__ import annotations

import asyncio
import io
import re
import unicodedata
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from advisor.audience import internal_amounts, internal_findings
from advisor.fonts import japanese_font
from advisor.labels import Audience, as_number, item_label, percent, yen
from advisor.tools.base import GeneratedFile, ToolContext, ToolInput
from advisor.tools.templates import HEADER_FIELDS, USER_TEXT, DocumentTemplate, fields_text, fill, template, tones
from core.errors import InputError

NAME = "generate_document"
FILE_KIND: dict[str, Literal["word", "excel", "pdf"]] = {"docx": "word", "xlsx": "excel", "pdf": "pdf"}
IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b")
BRACED = re.compile(r"\{[^{}]*\}")


MAX_AMOUNT = 1e13  # 10兆円: a unit price, quantity or cell beyond is a typo, and would overflow the yen layout


def _bounded(value: float, what: str) -> float:
    """``value`` when it is 0 to :data:`MAX_AMOUNT`; else a ValueError a person can act on."""
    if not 0 <= value <= MAX_AMOUNT:
        raise ValueError(f"{what} {value:g} は0から{MAX_AMOUNT:,.0f}までの数で書いてください")
    return value


class Item(BaseModel):
    name: str
    quantity: float = 1
    unit: str = "式"
    unit_price: float

    @field_validator("quantity", "unit_price")
    @classmethod
    def _amount(cls, value: float, info: ValidationInfo) -> float:
        return _bounded(value, "数量" if info.field_name == "quantity" else "単価")


class Table(BaseModel):
    title: str = ""
    columns: list[str] = Field(min_length=1)
    rows: list[list[str | float | int]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fits(self) -> Table:
        for number, row in enumerate(self.rows):
            if len(row) > len(self.columns):
                counts = f"{len(row)}個の値に対して列は{len(self.columns)}つです"
                raise ValueError(f"rows.{number}: {counts}。列を足すか値を減らしてください")
            for cell in row:
                if not isinstance(cell, str) and abs(cell) > MAX_AMOUNT:
                    raise ValueError(f"rows.{number}: {cell} は大きすぎます（{MAX_AMOUNT:.0e} まで）")
        return self


class DocumentData(BaseModel):
    recipient: str = Field("", description="宛名（例: 株式会社〇〇 購買部 御中）。")
    sender: str = Field("", description="差出人。行は / で区切る。")
    date: str = Field("", description="日付（省略時は今日）。")
    subject: str = Field("", description="件名（省略時は表題）。")
    body: list[str] = Field(default_factory=list, description="オーナーが伝えたい段落。")
    fields: dict[str, str] = Field(default_factory=dict, description="各文書の項目:\n" + fields_text())
    items: list[Item] = Field(default_factory=list, description="見積明細（品名・数量・単位・単価）。")
    tables: list[Table] = Field(default_factory=list)


def unwritable_character(value: Any, where: str = "") -> str | None:
    """Where ``value`` (any JSON) holds a character no document format can hold (a control character
    other than tab and line breaks, a lone surrogate, U+FFFE/U+FFFF), described; None when clean."""
    if isinstance(value, str):
        for char in value:
            if (unicodedata.category(char) in ("Cc", "Cs") and char not in "\t\n\r") or char in "\ufffe\uffff":
                return (
                    f"{where or '(input)'}: 文書に書けない文字（U+{ord(char):04X}）が含まれています。取り除いてください"
                )
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = unwritable_character(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


class DocumentInput(ToolInput):
    @model_validator(mode="before")
    @classmethod
    def _writable(cls, raw: Any) -> Any:
        problem = unwritable_character(raw)
        if problem:
            raise ValueError(problem)
        return raw

    document_type: Literal["quotation", "request_letter", "negotiation_materials", "agreement", "cost_breakdown"]
    tone: Literal["formal", "friendly", "assertive", "urgent"] = "formal"
    format: Literal["docx", "xlsx", "pdf"] = "pdf"
    data: DocumentData = Field(default_factory=DocumentData)
    audience: Audience | None = Field(None, description="external（取引先向け、既定）/ internal（社内用）。")
    disclose: list[Literal["premium", "standard", "minimum"]] = Field(
        default_factory=list, description="取引先に示すと決めた価格案（ほかの案の価格は載せられない）。"
    )
    attachments: list[str] = Field(default_factory=list, description="このセッションのグラフのキー。")
    include_cost_table: bool = Field(False, description="直近のコスト試算の費目別の表を載せる。")


class DocumentOutput(BaseModel):
    document_url: str
    key: str
    document_format: Literal["docx", "xlsx", "pdf"]
    audience: Audience
    preview: str
    files: list[GeneratedFile]


class Layout(BaseModel):
    """What every format renders: the same content, three layouts."""

    title: str
    date: str
    recipient: str
    sender: list[str]
    salutation: str  # 頭語 (letters), opening the first paragraph
    paragraphs: list[str]
    complimentary_close: str  # 結語 (letters), on its own line at the right
    record: list[str]  # 記 … 以上
    tables: list[Table]
    images: list[bytes]

    def texts(self) -> list[str]:
        cells = [str(c) for t in self.tables for c in [t.title, *t.columns, *(v for r in t.rows for v in r)]]
        return [self.title, self.date, self.recipient, *self.sender, *self.paragraphs, *self.record, *cells]


def today() -> str:
    d = date.today()
    return f"{d.year}年{d.month}月{d.day}日"


def written(value: str, kind: str) -> str:
    """A field value as the document writes it: a rate as 12.75%, an amount as 1,234,567円."""
    number = as_number(value)
    if number is None or kind == "text":
        return value.strip()
    if kind == "percent":
        given_as_percent = value.strip().endswith(("%", "％")) or abs(number) > 1
        return percent(number / 100 if given_as_percent else number)
    return yen(number)


def field_values(tpl: DocumentTemplate, d: DocumentData) -> dict[str, str]:
    """The template's fields, written out; InputError naming every unfilled or unknown field."""
    given = {**d.fields, "recipient": d.recipient or d.fields.get("recipient", ""), "sender": d.sender}
    unknown = sorted(set(d.fields) - set(tpl.fields))
    if unknown:
        raise InputError(
            f"data.fields: {', '.join(unknown)} はこの文書の項目ではありません。項目: "
            + "、".join(f"{n}（{f.label}）" for n, f in tpl.fields.items() if n not in HEADER_FIELDS)
        )
    missing = [n for n in tpl.fields if not str(given.get(n, "")).strip()]
    if missing:
        where = ", ".join(f"data.{n}" if n in HEADER_FIELDS else f"data.fields.{n}" for n in missing)
        labels = "、".join(f"{tpl.fields[n].label}" for n in missing)
        raise InputError(
            f"{where}: 未記入の項目があります（{labels}）。オーナーに確認して値を入れてください"
            + "（例: "
            + "、".join(f"{tpl.fields[n].label}={tpl.fields[n].example}" for n in missing if tpl.fields[n].example)
            + "）"
        )
    return {n: written(str(given[n]), f.kind) for n, f in tpl.fields.items()}


def _cost_table(result: dict[str, Any]) -> Table:
    rows: list[list[str | float | int]] = [
        [
            str(line.get("label") or item_label(str(line["item"]))),
            yen(line["current_amount"]),
            percent(line["change_rate"], signed=True),
            yen(line["new_amount"]),
            yen(line["increase"]),
        ]
        for line in result.get("lines", [])
    ]
    rows.append(
        [
            "合計",
            yen(result["current_total_cost"]),
            percent(result["cost_increase_rate"], signed=True),
            yen(result["new_total_cost"]),
            yen(result["cost_increase"]),
        ]
    )
    return Table(title="コスト上昇の内訳", columns=["費目", "現在", "変動率", "変動後", "増加額"], rows=rows)


def _body(tpl: DocumentTemplate, values: dict[str, str], own: list[str]) -> list[str]:
    paragraphs: list[str] = []
    for text in tpl.body:
        if text == USER_TEXT:
            paragraphs += own
        else:
            paragraphs.append(fill(text, values))
    if USER_TEXT not in tpl.body:
        paragraphs += own
    return paragraphs


def layout(data: DocumentInput, ctx: ToolContext) -> Layout:
    tpl, tone = template(data.document_type), tones()[data.tone]
    d = data.data
    values = field_values(tpl, d)
    paragraphs = _body(tpl, values, [p.strip() for p in d.body if p.strip()])
    salutation = close = ""
    if tpl.letter:
        salutation, close = tone.salutation, tone.complimentary_close
        paragraphs = [tone.opening, *paragraphs, tone.closing]
    tables = list(d.tables)
    if d.items:
        rows: list[list[str | float | int]] = [
            [i.name, f"{i.quantity:g}", i.unit, yen(i.unit_price), yen(i.quantity * i.unit_price)] for i in d.items
        ]
        rows.append(["合計（税抜）", "", "", "", yen(sum(i.quantity * i.unit_price for i in d.items))])
        tables.insert(0, Table(title="明細", columns=["品名", "数量", "単位", "単価", "金額"], rows=rows))
    if data.include_cost_table:
        cost = next((r for r in reversed(ctx.earlier) if r.get("tool") == "calculate_cost_impact"), None)
        if cost is None:
            raise InputError("include_cost_table: this session has no calculate_cost_impact result yet; run it first")
        tables.append(_cost_table(cost["output"]))
    return Layout(
        title=d.subject or tpl.title,
        date=d.date or today(),
        recipient=values.get("recipient", d.recipient),
        sender=[s.strip() for s in values.get("sender", d.sender).split("/") if s.strip()],
        salutation=salutation,
        paragraphs=paragraphs,
        complimentary_close=close,
        record=[fill(r, values) for r in tpl.record],
        tables=tables,
        images=[],
    )


def attachments(data: DocumentInput, ctx: ToolContext, audience: Audience) -> list[bytes]:
    """The attachments' images; an internal one in a document for the buyer is refused."""
    images = []
    for key in data.attachments:
        whose = ctx.file_audience(key)
        blob = ctx.earlier_file(key)
        if blob is None or whose is None:
            raise InputError(f"attachments: {key!r} is not a file of this session; use a key a tool returned")
        if audience == "external" and whose != "external":
            raise InputError(
                "添付のグラフは社内用の分析（松竹梅・目標価格・利益など）のため、取引先向けの文書には添付できません。"
                f"添付を外すか、社内の数字を含まないグラフを audience=external で作ってください（attachments: {key}）"
            )
        if key.endswith(".png"):
            images.append(blob)
    return images


def check(doc: Layout, data: DocumentInput, ctx: ToolContext, audience: Audience) -> None:
    """Refuse what must not be in the document: placeholders, identifiers, and for the buyer internal figures."""
    texts = doc.texts()
    joined = "\n".join(texts)
    braces = sorted(set(BRACED.findall(joined)))
    if braces:
        raise InputError(
            f"data: {', '.join(braces)} は差し込まれていない項目です。値を入れるか、その文を消してください"
        )
    names = sorted(set(IDENTIFIER.findall(joined)))
    if names:
        raise InputError(
            f"data: 英語の識別子 {', '.join(names)} が文"
            f"書に残っています。日本語の名称（例: 材料費、労務費）に直してください"
        )
    if audience == "external":
        found = internal_findings(texts, internal_amounts(ctx.earlier, data.disclose))
        if found:
            raise InputError(
                f"取引先向けの文書に社内用の情報が含まれています: {'、'.join(found)}。"
                "取り除くか、示すと決めた価格案を disclose に指定してください（例: disclose=['standard']）"
            )


def to_docx(doc: Layout) -> bytes:
    from docx import Document
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.oxml.ns import qn
    from docx.shared import Cm, Pt

    out = Document()
    style = out.styles["Normal"]
    style.font.name = "IPAexGothic"
    style.font.size = Pt(10.5)
    style.element.get_or_add_rPr().get_or_add_rFonts().set(qn("w:eastAsia"), "IPAexGothic")

    def line(text: str, align: Any = WD_ALIGN_PARAGRAPH.LEFT, bold: bool = False, size: float | None = None) -> None:
        para = out.add_paragraph()
        para.alignment = align
        run = para.add_run(text)
        run.bold = bold
        if size:
            run.font.size = Pt(size)

    line(doc.date, WD_ALIGN_PARAGRAPH.RIGHT)
    if doc.recipient:
        line(doc.recipient)
    for s in doc.sender:
        line(s, WD_ALIGN_PARAGRAPH.RIGHT)
    line(doc.title, WD_ALIGN_PARAGRAPH.CENTER, bold=True, size=14)
    for i, text in enumerate(doc.paragraphs):
        line(f"{doc.salutation}　{text}" if i == 0 and doc.salutation else f"　{text}")
    if doc.complimentary_close:
        line(doc.complimentary_close, WD_ALIGN_PARAGRAPH.RIGHT)
    particulars = bool(doc.record or doc.tables or doc.images)
    if particulars and doc.salutation:
        line("記", WD_ALIGN_PARAGRAPH.CENTER)
    for n, text in enumerate(doc.record, start=1):
        line(f"{n}．{text}")
    for table in doc.tables:
        if table.title:
            line(table.title, bold=True)
        grid = out.add_table(rows=1, cols=len(table.columns))
        grid.style = "Table Grid"
        for cell, name in zip(grid.rows[0].cells, table.columns, strict=True):
            cell.text = name
        for row in table.rows:
            for cell, value in zip(grid.add_row().cells, row, strict=False):
                cell.text = str(value)
    for image in doc.images:
        out.add_picture(io.BytesIO(image), width=Cm(15))
    if particulars and doc.salutation:
        line("以上", WD_ALIGN_PARAGRAPH.RIGHT)
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
    for text in [doc.date, doc.recipient, *doc.sender]:
        if text:
            sheet.append([text])
    sheet.append([doc.title])
    sheet.cell(sheet.max_row, 1).font = Font(bold=True, size=14)
    opened = [f"{doc.salutation}　{t}" if i == 0 and doc.salutation else t for i, t in enumerate(doc.paragraphs)]
    closed = [doc.complimentary_close] if doc.complimentary_close else []
    for text in [*opened, *closed, *(f"{n}．{r}" for n, r in enumerate(doc.record, start=1))]:
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
    from fpdf.enums import WrapMode

    pdf = FPDF(format="A4")
    pdf.set_margins(22, 20, 22)
    pdf.add_font("IPAexG", fname=str(font))
    pdf.add_font("IPAexG", style="B", fname=str(font))  # table headings ask for bold
    pdf.set_auto_page_break(auto=True, margin=18)
    pdf.add_page()
    pdf.set_font("IPAexG", size=10.5)

    def line(text: str, align: str = "L", height: float = 6.5) -> None:
        # Japanese has no spaces between words: wrap at any character (word wrapping would move a whole
        # sentence after a leading 全角 space to the next line and leave a blank one)
        pdf.multi_cell(0, height, text, align=align, new_x="LMARGIN", new_y="NEXT", wrapmode=WrapMode.CHAR)

    line(doc.date, "R")
    pdf.ln(2)
    if doc.recipient:
        pdf.set_font("IPAexG", size=11.5)
        line(doc.recipient)
        pdf.set_font("IPAexG", size=10.5)
    pdf.ln(2)
    for s in doc.sender:
        line(s, "R")
    pdf.ln(6)
    pdf.set_font("IPAexG", size=15)
    line(doc.title, "C", 9)
    pdf.ln(5)
    pdf.set_font("IPAexG", size=10.5)
    for i, text in enumerate(doc.paragraphs):
        line(f"{doc.salutation}　{text}" if i == 0 and doc.salutation else f"　{text}")
        pdf.ln(1.5)
    if doc.complimentary_close:
        line(doc.complimentary_close, "R")
    particulars = bool(doc.record or doc.tables or doc.images)
    if particulars and doc.salutation:
        pdf.ln(3)
        line("記", "C")
        pdf.ln(2)
    for n, text in enumerate(doc.record, start=1):
        line(f"{n}．{text}")
    for table in doc.tables:
        pdf.ln(3)
        if table.title:
            line(table.title)
        with pdf.table(text_align=("LEFT", *["RIGHT"] * (len(table.columns) - 1))) as grid:
            head = grid.row()
            for name in table.columns:
                head.cell(name, align="CENTER")
            for row in table.rows:
                cells = grid.row()
                for value in row:
                    cells.cell(str(value))
    for image in doc.images:
        pdf.ln(4)
        pdf.image(io.BytesIO(image), w=150)
    if particulars and doc.salutation:
        pdf.ln(3)
        line("以上", "R")
    return bytes(pdf.output())


RENDERERS = {"docx": to_docx, "xlsx": to_xlsx}


async def run(data: DocumentInput, ctx: ToolContext) -> DocumentOutput:
    audience: Audience = data.audience or template(data.document_type).audience
    images = attachments(data, ctx, audience)
    doc = layout(data, ctx).model_copy(update={"images": images})
    check(doc, data, ctx, audience)
    if data.format == "pdf":  # the only format that needs a font file (a ConfigError saying which, if none)
        blob = await asyncio.to_thread(to_pdf, doc, japanese_font(ctx.section))
    else:
        blob = await asyncio.to_thread(RENDERERS[data.format], doc)
    saved = ctx.save(NAME, data.document_type, data.format, blob, FILE_KIND[data.format], audience)
    preview = (f"{doc.salutation}　" if doc.salutation else "") + "".join(doc.paragraphs)[:160]
    return DocumentOutput(
        document_url=saved.url,
        key=saved.key,
        document_format=data.format,
        audience=audience,
        preview=preview,
        files=[saved],
    )


DESCRIPTION = (
    "文書生成（日本のビジネス文書の書式、docx/xlsx/pdf）。項目は data.fields の説明のとおりで、未記入があると"
    "作成できません。取引先向けの文書に社内の数字（松竹梅・目標価格・利益）や社内用のグラフは載せられません。"
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
    "attachments",
    "check",
    "field_values",
    "layout",
    "run",
    "to_docx",
    "to_pdf",
    "to_xlsx",
    "today",
    "written",
]
