"""What a buyer receives from the advisor is true and well made (issue 37, 2): the enclosure sentence only
over a real enclosure, a real sender and recipient or a visible 下書き, a warning for a rate below the
owner's own minimum, A4 in every format, 弊社 throughout, files named in Japanese without ids; and the
chat that makes the letter says the same. Every document is opened again and read."""

from __future__ import annotations

import io
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from docx import Document
from openpyxl import load_workbook
from pypdf import PdfReader

from advisor.labels import labels
from advisor.tools.base import ToolContext
from advisor.tools.cost import CostImpactInput
from advisor.tools.cost import run as cost
from advisor.tools.document import DocumentInput, DocumentOutput
from advisor.tools.document import run as document
from core.errors import InputError
from core.settings import load_settings

TODAY = date.today().isoformat()
FIELDS = {"increase_rate": "12%", "effective_date": "2027年1月1日", "reply_by": "2026年12月15日"}
REAL = {"recipient": "株式会社丸山商事 購買部 御中", "sender": "株式会社山田製作所/代表取締役 山田太郎"}


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(load_settings(None, {"data_dir": str(tmp_path)}), session_id="sess-1")


async def with_cost(ctx: ToolContext) -> None:
    """A cost calculation in the session: 梅 (minimum) at +10% (cost up 100 on a price of 1,000)."""
    calc = await cost(
        CostImpactInput.model_validate(
            {
                "current_cost_structure": {"材料費": {"amount": 500}, "労務費": {"amount": 300}},
                "price_changes": {"材料費": 0.2},
                "current_price": 1000,
            }
        ),
        ctx,
    )
    ctx.earlier.append({"tool": "calculate_cost_impact", "output": calc.model_dump(mode="json")})


async def letter(ctx: ToolContext, fmt: str = "pdf", **given: Any) -> DocumentOutput:
    data = {"fields": FIELDS, "body": ["当社の主力製品では材料費が20%上昇しました。"], **REAL, **given.pop("data", {})}
    body = {"document_type": "request_letter", "format": fmt, "data": data, **given}
    return await document(DocumentInput.model_validate(body), ctx)


def text_of(path: Path) -> str:
    blob = path.read_bytes()
    if path.suffix == ".pdf":
        return "".join(page.extract_text() for page in PdfReader(io.BytesIO(blob)).pages)
    if path.suffix == ".docx":
        doc = Document(io.BytesIO(blob))
        cells = [c.text for t in doc.tables for r in t.rows for c in r.cells]
        return "\n".join([p.text for p in doc.paragraphs] + cells)
    sheet = load_workbook(io.BytesIO(blob)).active
    assert sheet is not None
    return "\n".join(str(c.value) for row in sheet.iter_rows() for c in row if c.value is not None)


def saved(ctx: ToolContext, out: DocumentOutput) -> Path:
    return Path(ctx.settings.data_dir) / "artifacts" / out.key


@pytest.mark.parametrize("fmt", ["pdf", "docx", "xlsx"])
async def test_the_enclosure_sentence_only_over_a_real_enclosure(tmp_path: Path, fmt: str) -> None:
    ctx = context(tmp_path)
    plain = await letter(ctx, fmt)
    text = text_of(saved(ctx, plain))
    assert "添付" not in text and plain.enclosures == []  # issue 37: it said 添付いたしました over nothing
    assert "下記のとおり製品価格の改定をお願い申し上げます。労務費につきましては" in text.replace("\n", "")
    await with_cost(ctx)
    enclosed = await letter(ctx, fmt, include_cost_table=True)
    text = text_of(saved(ctx, enclosed)).replace("\n", "")
    assert enclosed.enclosures == ["コスト上昇の内訳"]
    assert "改定の根拠として、コスト上昇の内訳を添付いたしました。" in text
    assert "添付資料　コスト上昇の内訳" in text and "材料費" in text


@pytest.mark.parametrize(
    ("field", "value"),
    [("sender", "山田製作所（例）"), ("recipient", "取引先A社 購買部 御中"), ("recipient", "株式会社〇〇 御中")],
)
async def test_example_senders_and_recipients_are_refused(tmp_path: Path, field: str, value: str) -> None:
    with pytest.raises(InputError, match=r"例の値です.*draft=true"):
        await letter(context(tmp_path), data={field: value})
    with pytest.raises(InputError, match="未記入の項目があります（差出人"):
        await letter(context(tmp_path), data={"sender": ""})


@pytest.mark.parametrize("fmt", ["pdf", "docx", "xlsx"])
async def test_a_draft_says_so_at_the_top_and_in_its_name(tmp_path: Path, fmt: str) -> None:
    ctx = context(tmp_path)
    out = await letter(ctx, fmt, draft=True, data={"sender": "", "recipient": ""})
    assert out.draft and out.key.endswith(f"/価格改定のお願い_下書き_{TODAY}.{fmt}")
    text = text_of(saved(ctx, out))
    first = text.strip().splitlines()[0]
    assert first == labels().notices["draft_mark"] == "下書き（取引先には送らないでください）"
    assert "〔宛名〕" in text and "〔差出人〕" in text  # blanks to fill, not invented names
    assert out.notices == [labels().notices["draft"]]


async def test_a_rate_below_the_owners_minimum_is_made_with_a_notice(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    await with_cost(ctx)
    low = await letter(ctx, data={"fields": {**FIELDS, "increase_rate": "8%"}})
    (notice,) = low.notices
    assert notice.startswith("ご依頼の改定率8%は、試算した最低限の価格案「梅（最低防衛）」の+10%を下回っています")
    assert "8%改定" in text_of(saved(ctx, low))  # made as asked: the owner decides
    at = await letter(ctx, data={"fields": {**FIELDS, "increase_rate": "0.1"}})
    assert at.notices == []


async def test_every_format_is_a4(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    pdf = PdfReader(saved(ctx, await letter(ctx, "pdf")))
    assert all((round(float(p.mediabox.width)), round(float(p.mediabox.height))) == (595, 842) for p in pdf.pages)
    section = Document(saved(ctx, await letter(ctx, "docx"))).sections[0]
    size = (round(section.page_width.mm), round(section.page_height.mm))  # type: ignore[union-attr]
    assert size == (210, 297)  # python-docx starts from US Letter
    sheet = load_workbook(saved(ctx, await letter(ctx, "xlsx"))).active
    assert sheet is not None and str(sheet.page_setup.paperSize) == sheet.PAPERSIZE_A4


async def test_the_sender_is_heisha_throughout(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    text = text_of(saved(ctx, await letter(ctx, "docx")))
    assert "弊社の主力製品では材料費が20%上昇しました。" in text and "当社" not in text


async def test_files_are_named_in_japanese_without_ids_and_never_collide(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    names = [(await letter(ctx, fmt)).files[0].name for fmt in ("pdf", "pdf", "docx", "pdf")]
    assert names == [
        f"価格改定のお願い_{TODAY}.pdf",
        f"価格改定のお願い_{TODAY}_2.pdf",
        f"価格改定のお願い_{TODAY}.docx",
        f"価格改定のお願い_{TODAY}_3.pdf",
    ]
    folder = tmp_path / "artifacts" / "advisor" / "sess-1"
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)  # four files, none written over


async def test_the_chat_asks_for_the_sender_and_warns_of_a_rate_below_the_minimum(tmp_path: Path) -> None:
    """The chat (the shipped scripted model through the real orchestrator) makes a draft while the sender is
    unknown and asks for it, never claims an enclosure it did not make, and passes on the tools' notices."""
    from tests.unit.test_advisor_orchestrator import make, turn

    o, _ = make(tmp_path)
    first = await turn(o, "取引先に出す申入書を作ってください")
    done = next(e for e in first if e["type"] == "done")["text"]
    assert "下書きとして" in done and "差出人（貴社名・代表者名）と宛名" in done
    assert "添付" not in done.split("**ご確認ください**")[0]  # no cost table, no chart: nothing enclosed
    assert labels().notices["draft"] in done
    files = [e["file"]["name"] for e in first if e["type"] == "file"]
    assert sorted(files) == [f"価格改定のお願い_下書き_{TODAY}.docx", f"価格改定のお願い_下書き_{TODAY}.pdf"]
    await turn(o, "材料費が20%上がりました。いくら値上げすべきか試算してください")
    second = await turn(
        o, "5%の値上げで申入書を作ってください。差出人は株式会社山田製作所、宛名は株式会社丸山商事 購買部 御中です"
    )
    done = next(e for e in second if e["type"] == "done")["text"]
    assert "下書き" not in done.split("**ご確認ください**")[0] and "添付はコスト上昇の内訳です" in done
    assert "ご依頼の改定率5%は、試算した最低限の価格案「梅（最低防衛）」の" in done
    assert done.count("ご依頼の改定率5%") == 1  # the PDF and the Word letter: one notice


async def test_knowledge_the_base_does_not_hold_is_said_so_not_cited(tmp_path: Path) -> None:
    """「補助金について教えて」 cited 独禁法 and 取適法 passages: now no passage holds enough of it."""
    from tests.unit.test_advisor_orchestrator import make, turn

    o, _ = make(tmp_path)
    events = await turn(o, "補助金について教えて")
    done = next(e for e in events if e["type"] == "done")["text"]
    assert labels().notices["kb_nothing_mode1"] in done
    assert "出典" not in done and "独占禁止法" not in done and "取適法" not in done


async def test_the_chart_names_the_scenarios_as_the_workbook_does(tmp_path: Path) -> None:
    """Issue 37 (2): the workbook said 梅（最低防衛） where the chart said 梅（最低）: one set of names."""
    from tests.unit.test_advisor_orchestrator import make, state, turn

    o, repo = make(tmp_path)
    await turn(o, "材料費が上がりました。値上げ幅を試算して松竹梅のグラフにしてください")
    results = {r["tool"]: r for r in state(repo).attributes["tool_results"]}
    drawn = [c["label"] for c in results["generate_chart"]["input"]["data"]["categories"]][1:]
    assert drawn == [labels().scenarios[k] for k in ("minimum", "standard", "premium")]
    (workbook,) = results["calculate_cost_impact"]["output"]["files"]
    sheet = load_workbook(tmp_path / "artifacts" / workbook["key"]).active
    assert sheet is not None
    assert sorted(drawn) == sorted(str(sheet.cell(r, 1).value) for r in range(15, 18))
