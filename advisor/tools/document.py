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

What a letter says is true of the letter: a sentence about an enclosure appears only when a table or
chart is really enclosed (the template's ``when: enclosure``), and the output lists the enclosures so
the chat can say what was sent. The sender and recipient must be real: an example value (「山田製作所
（例）」, 「〇〇」, 「A社」) is refused unless the document is made as a draft (``draft``), which every
format marks 下書き at the top and in its file name. For the buyer the sender is 弊社 throughout
(当社 in the owner's paragraphs is written 弊社). A requested rate below the owner's own minimum
(梅 of the latest cost calculation) is made as asked, with a notice the chat shows. Every format is
A4; files are named for people (価格改定のお願い_2026-11-27.pdf).
"""

from __future__ import annotations

import asyncio
import io
import re
import unicodedata
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from advisor.audience import internal_amounts, internal_findings
from advisor.fonts import japanese_font
from advisor.labels import Audience, as_number, item_label, labels, percent, yen
from advisor.tools.base import GeneratedFile, ToolContext, ToolInput
from advisor.tools.templates import (
    HEADER_FIELDS,
    USER_TEXT,
    DocumentTemplate,
    Paragraph,
    fields_text,
    fill,
    template,
    tones,
)
from core.errors import InputError

NAME = "generate_document"
A4_MM = (210, 297)
MARGINS_MM = (22, 20)  # left and right, top and bottom
FILE_KIND: dict[str, Literal["word", "excel", "pdf"]] = {"docx": "word", "xlsx": "excel", "pdf": "pdf"}
IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b")
BRACED = re.compile(r"\{[^{}]*\}")
# What an example or a blank to fill looks like: （例）, 〇〇 or △△, or a company named by one letter (A社).
EXAMPLE_VALUE = re.compile(r"[（(]例[）)]|例[:：]|[〇○△×●□]{2}|(?<![A-Za-zＡ-Ｚａ-ｚ])[A-ZＡ-Ｚ]社")
OTHER_SELF = re.compile(r"当社|我が社|わが社")  # a letter to the buyer says 弊社
SELF = "弊社"
ITEMS_TITLE = "明細"  # a quotation's own lines: part of it, not an enclosure


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
    draft: bool = Field(
        False,
        description="差出人・宛名などが未確認のときに「下書き」として作る（各形式に明記）。確認できたら false。",
    )


class DocumentOutput(BaseModel):
    document_url: str
    key: str
    document_format: Literal["docx", "xlsx", "pdf"]
    audience: Audience
    preview: str
    draft: bool = Field(False, description="Made as a draft (marked 下書き): the sender or recipient is not confirmed.")
    enclosures: list[str] = Field(default_factory=list, description="What the document encloses (tables, charts).")
    notices: list[str] = Field(default_factory=list, description="What the owner must know (shown in the chat).")
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
    draft: bool = False  # marked 下書き at the top of every format

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


def field_values(tpl: DocumentTemplate, d: DocumentData, *, draft: bool = False) -> dict[str, str]:
    """The template's fields, written out; InputError naming every unfilled or unknown field, and every
    example value (「山田製作所（例）」) where a real one is needed. A draft leaves a blank 〔label〕 instead."""
    given = {**d.fields, "recipient": d.recipient or d.fields.get("recipient", ""), "sender": d.sender}
    unknown = sorted(set(d.fields) - set(tpl.fields))
    if unknown:
        raise InputError(
            f"data.fields: {', '.join(unknown)} はこの文書の項目ではありません。項目: "
            + "、".join(f"{n}（{f.label}）" for n, f in tpl.fields.items() if n not in HEADER_FIELDS)
        )
    missing = [n for n in tpl.fields if not str(given.get(n, "")).strip()]
    examples = [n for n in tpl.fields if n not in missing and EXAMPLE_VALUE.search(str(given[n]))]
    if (missing or examples) and not draft:
        where = ", ".join(f"data.{n}" if n in HEADER_FIELDS else f"data.fields.{n}" for n in [*missing, *examples])
        said = []
        if missing:
            labels_missing = "、".join(tpl.fields[n].label for n in missing)
            samples = "、".join(f"{tpl.fields[n].label}={tpl.fields[n].example}" for n in missing)
            said.append(f"未記入の項目があります（{labels_missing}。例: {samples}）")
        if examples:
            shown = "、".join(f"{tpl.fields[n].label}「{given[n]}」" for n in examples)
            said.append(f"{shown}は例の値です。実際の会社名・氏名などを入れてください")
        ask = "オーナーに確認して値を入れるか、確認前なら draft=true で「下書き」として作成してください"
        raise InputError(f"{where}: " + "。".join(said) + "。" + ask)
    return {n: f"〔{f.label}〕" if n in missing else written(str(given[n]), f.kind) for n, f in tpl.fields.items()}


def requested_rate(tpl: DocumentTemplate, d: DocumentData) -> Decimal | None:
    """The rate the document asks for (its ``increase_rate`` field) as a fraction, when it gives one."""
    if "increase_rate" not in tpl.fields:
        return None
    value = str(d.fields.get("increase_rate", "")).strip()
    number = as_number(value)
    if number is None:
        return None
    return number / 100 if value.endswith(("%", "％")) or abs(number) > 1 else number


def below_minimum(rate: Decimal | None, ctx: ToolContext) -> str | None:
    """A notice when ``rate`` is below the 梅 (minimum) price increase of the session's latest cost
    calculation: the owner's own floor, under which the cost increase is not even passed on."""
    cost = next((r for r in reversed(ctx.earlier) if r.get("tool") == "calculate_cost_impact"), None)
    if rate is None or cost is None:
        return None
    minimum = (cost.get("output") or {}).get("scenarios", {}).get("minimum")
    if not minimum or rate >= Decimal(str(minimum["price_increase_rate"])):
        return None
    return (
        labels()
        .notices["below_minimum"]
        .format(
            rate=percent(rate), label=minimum["label"], minimum=percent(minimum["price_increase_rate"], signed=True)
        )
    )


def as_self(text: str) -> str:
    """The sender's self-reference as a letter to the buyer writes it: 弊社."""
    return OTHER_SELF.sub(SELF, text)


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


def _texts(items: list[str | Paragraph], values: dict[str, str], own: list[str], enclosed: bool) -> list[str]:
    """Paragraphs (or 記 lines) filled in: the owner's own at ``{user_text}`` (at the end when the template
    has no slot), one ``when: enclosure`` only when something is enclosed, ``join`` onto the one before."""
    out: list[str] = []
    for item in items:
        text = item if isinstance(item, str) else item.text
        if text == USER_TEXT:
            out += own
            continue
        if isinstance(item, Paragraph) and item.when == "enclosure" and not enclosed:
            continue
        filled = fill(text, values)
        if isinstance(item, Paragraph) and item.join and out:
            out[-1] += filled
        else:
            out.append(filled)
    if own and not any(text == USER_TEXT for text in (i if isinstance(i, str) else i.text for i in items)):
        out += own
    return out


def layout(data: DocumentInput, ctx: ToolContext, images: list[bytes] | None = None) -> Layout:
    tpl, tone = template(data.document_type), tones()[data.tone]
    external = (data.audience or tpl.audience) == "external"
    d = data.data
    values = field_values(tpl, d, draft=data.draft)
    own = [p.strip() for p in d.body if p.strip()]
    if external:
        values = {k: as_self(v) for k, v in values.items()}
        own = [as_self(p) for p in own]
    tables = list(d.tables)
    if d.items:
        rows: list[list[str | float | int]] = [
            [i.name, f"{i.quantity:g}", i.unit, yen(i.unit_price), yen(i.quantity * i.unit_price)] for i in d.items
        ]
        rows.append(["合計（税抜）", "", "", "", yen(sum(i.quantity * i.unit_price for i in d.items))])
        tables.insert(0, Table(title=ITEMS_TITLE, columns=["品名", "数量", "単位", "単価", "金額"], rows=rows))
    if data.include_cost_table:
        cost = next((r for r in reversed(ctx.earlier) if r.get("tool") == "calculate_cost_impact"), None)
        if cost is None:
            raise InputError("include_cost_table: this session has no calculate_cost_impact result yet; run it first")
        tables.append(_cost_table(cost["output"]))
    pictures = list(images or [])
    enclosed = enclosure_names(tables, pictures)
    values = {**values, "enclosures": "、".join(enclosed)}
    paragraphs = _texts(tpl.body, values, own, bool(enclosed))
    salutation = close = ""
    if tpl.letter:
        salutation, close = tone.salutation, tone.complimentary_close
        paragraphs = [tone.opening, *paragraphs, tone.closing]
    return Layout(
        title=d.subject or tpl.title,
        date=d.date or today(),
        recipient=values.get("recipient", d.recipient),
        sender=[s.strip() for s in values.get("sender", d.sender).split("/") if s.strip()],
        salutation=salutation,
        paragraphs=paragraphs,
        complimentary_close=close,
        record=_texts(tpl.record, values, [], bool(enclosed)),
        tables=tables,
        images=pictures,
        draft=data.draft,
    )


def enclosure_names(tables: list[Table], images: list[bytes]) -> list[str]:
    """What a document encloses, as its letter names it: its tables (but a quotation's own 明細) and charts."""
    names = [t.title or labels().notices["enclosure_table"] for t in tables if t.title != ITEMS_TITLE]
    names += [labels().notices["enclosure_chart"]] * min(1, len(images))
    return list(dict.fromkeys(names))


def enclosures(doc: Layout) -> list[str]:
    return enclosure_names(doc.tables, doc.images)


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
    from docx.shared import Cm, Mm, Pt, RGBColor

    out = Document()
    section = out.sections[0]  # A4, as the PDF (python-docx starts from US Letter)
    section.page_width, section.page_height = Mm(A4_MM[0]), Mm(A4_MM[1])
    section.left_margin = section.right_margin = Mm(MARGINS_MM[0])
    section.top_margin = section.bottom_margin = Mm(MARGINS_MM[1])
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

    if doc.draft:
        mark = out.add_paragraph().add_run(draft_mark())
        mark.bold = True
        mark.font.size = Pt(16)
        mark.font.color.rgb = RGBColor(0xB4, 0x23, 0x18)
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
    sheet.page_setup.paperSize = sheet.PAPERSIZE_A4
    sheet.page_setup.fitToWidth = 1
    sheet.sheet_properties.pageSetUpPr.fitToPage = True
    if doc.draft:
        sheet.append([draft_mark()])
        sheet.cell(1, 1).font = Font(bold=True, size=16, color="B42318")
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
    pdf.set_margins(MARGINS_MM[0], MARGINS_MM[1], MARGINS_MM[0])
    pdf.add_font("IPAexG", fname=str(font))
    pdf.add_font("IPAexG", style="B", fname=str(font))  # table headings ask for bold
    pdf.set_auto_page_break(auto=True, margin=18)
    pdf.add_page()
    pdf.set_font("IPAexG", size=10.5)

    def line(text: str, align: str = "L", height: float = 6.5) -> None:
        # Japanese has no spaces between words: wrap at any character (word wrapping would move a whole
        # sentence after a leading 全角 space to the next line and leave a blank one)
        pdf.multi_cell(0, height, text, align=align, new_x="LMARGIN", new_y="NEXT", wrapmode=WrapMode.CHAR)

    if doc.draft:  # a red box at the top: no one mistakes it for the letter to send
        pdf.set_font("IPAexG", size=16)
        pdf.set_text_color(0xB4, 0x23, 0x18)
        pdf.set_draw_color(0xB4, 0x23, 0x18)
        pdf.cell(pdf.get_string_width(draft_mark()) + 8, 11, draft_mark(), border=1, align="C")
        pdf.set_text_color(0, 0, 0)
        pdf.set_draw_color(0, 0, 0)
        pdf.set_font("IPAexG", size=10.5)
        pdf.ln(13)
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


def draft_mark() -> str:
    return labels().notices["draft_mark"]


async def run(data: DocumentInput, ctx: ToolContext) -> DocumentOutput:
    tpl = template(data.document_type)
    audience: Audience = data.audience or tpl.audience
    images = attachments(data, ctx, audience)
    doc = layout(data, ctx, images)
    check(doc, data, ctx, audience)
    if data.format == "pdf":  # the only format that needs a font file (a ConfigError saying which, if none)
        blob = await asyncio.to_thread(to_pdf, doc, japanese_font(ctx.section))
    else:
        blob = await asyncio.to_thread(RENDERERS[data.format], doc)
    name = tpl.title + (labels().notices["draft_suffix"] if data.draft else "")
    saved = ctx.save(NAME, name, data.format, blob, FILE_KIND[data.format], audience)
    preview = (f"{doc.salutation}　" if doc.salutation else "") + "".join(doc.paragraphs)[:160]
    notices = [labels().notices["draft"]] if data.draft else []
    low = below_minimum(requested_rate(tpl, data.data), ctx)
    notices += [low] if low else []
    return DocumentOutput(
        document_url=saved.url,
        key=saved.key,
        document_format=data.format,
        audience=audience,
        preview=preview,
        draft=data.draft,
        enclosures=enclosures(doc),
        notices=notices,
        files=[saved],
    )


DESCRIPTION = (
    "文書生成（日本のビジネス文書の書式、docx/xlsx/pdf、A4）。項目は data.fields の説明のとおりで、未記入があると"
    "作成できません。差出人・宛名は実在の名称が必要で、例の値（〇〇、（例）、A社）は使えません。確認できていなければ"
    "オーナーに尋ね、先に作るなら draft=true で「下書き」と明記して作ります。取引先向けの文書に社内の数字（松竹梅・"
    "目標価格・利益）や社内用のグラフは載せられません。出力の enclosures が実際の添付物で、notices はオーナーに必ず"
    "伝えること。"
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
    "as_self",
    "attachments",
    "below_minimum",
    "check",
    "draft_mark",
    "enclosure_names",
    "enclosures",
    "field_values",
    "layout",
    "requested_rate",
    "run",
    "to_docx",
    "to_pdf",
    "to_xlsx",
    "today",
    "unwritable_character",
    "written",
]
