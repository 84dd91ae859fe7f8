"""Local corpus search: loading, manifest, BM25 ranking (Japanese and English), filters and errors."""

from __future__ import annotations

import os
import random
import re
import time
from datetime import date
from pathlib import Path

import pytest

from core.errors import InputError
from scrapers.search import LocalCorpus, LocalSearchProvider, SearchProvider, SearchResult

JA_PRICE = """<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8">
<title>中小企業の価格転嫁の現状</title><meta name="date" content="2024-11-29"></head>
<body><nav>ホーム ニュース 価格 価格 価格</nav><script>var price = "価格転嫁";</script>
<article><h1>価格転嫁率の調査</h1>
<p>中小企業庁の調査によると、コスト全体の価格転嫁率は46.1%にとどまった。</p>
<p>労務費の転嫁は特に遅れている。</p></article><footer>著作権 価格</footer></body></html>"""
JA_TOURISM = """<html><head><title>観光業の人手不足</title></head>
<body><p>地方の観光業では人手不足が深刻化し、旅館の価格も上がっている。</p></body></html>"""
EN_RATES = """<html><head><title>Central bank holds rates</title>
<meta property="article:published_time" content="2024-10-02T09:00:00+09:00"></head>
<body><p>The central bank kept interest rates unchanged, citing weak consumption.</p></body></html>"""
EN_PASS = """# Cost pass-through in small firms

Small firms struggle to pass rising input costs on to their customers. The pass-through rate
stayed low in 2024 according to the survey.
"""
TXT_CATS = "Caring for cats\nCats sleep most of the day and like warm places.\n"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    write(d / "pages/ja/price.html", JA_PRICE)
    write(d / "pages/ja/tourism.htm", JA_TOURISM)
    write(d / "pages/en/rates.html", EN_RATES)
    write(d / "notes/pass.md", EN_PASS)
    write(d / "cats.txt", TXT_CATS)
    write(d / "ignored.pdf", b"%PDF-1.4")
    write(d / ".hidden/secret.txt", "price 価格転嫁")
    return d


MANIFEST = """topic: 中小企業の価格転嫁の現状
pages:
  - file: pages/ja/price.html   # relative to the corpus dir
    url: https://sme-price-survey.example/2024/autumn
    title: "中小企業 価格転嫁 調査 2024年秋"
    source_type: official
    lang: ja
    published: 2024-11-29
  - file: pages/en/rates.html
    url: https://news.example/rates
    source_type: news
    lang: en
    published: 2024-10-02
    duplicate_of: https://sme-price-survey.example/2024/autumn
"""


async def search(provider: LocalSearchProvider, query: str, **kwargs: object) -> list[SearchResult]:
    return await provider.search(query, **kwargs)  # type: ignore[arg-type]


def test_loads_html_markdown_text_recursively_with_file_urls(corpus_dir: Path) -> None:
    corpus = LocalCorpus(corpus_dir)
    names = sorted(d.path.name for d in corpus.documents)
    assert names == ["cats.txt", "pass.md", "price.html", "rates.html", "tourism.htm"]
    price = corpus.get((corpus_dir / "pages/ja/price.html").resolve().as_uri())
    assert price is not None
    assert price.url.startswith("file://")
    assert price.title == "中小企業の価格転嫁の現状"
    assert price.published == date(2024, 11, 29)
    assert price.lang == "ja"
    assert "var price" not in price.text and "ホーム" not in price.text and "著作権" not in price.text
    by_name = {d.path.name: d for d in corpus.documents}
    assert by_name["pass.md"].title == "Cost pass-through in small firms"
    assert by_name["cats.txt"].title == "Caring for cats"
    assert by_name["rates.html"].published == date(2024, 10, 2)
    assert by_name["rates.html"].lang == "en"


def test_path_for_round_trips(corpus_dir: Path) -> None:
    corpus = LocalCorpus(corpus_dir)
    for doc in corpus.documents:
        assert corpus.path_for(doc.url) == doc.path
        assert corpus.path_for(doc.path.as_uri()) == doc.path
    assert corpus.path_for("https://elsewhere.example/") is None
    assert corpus.path_for((corpus_dir / "ignored.pdf").as_uri()) is None


def test_path_for_non_ascii_file_names(tmp_path: Path) -> None:
    page = write(tmp_path / "コーパス/観光 100%.txt", "観光の現状\n訪日客が増えた。")
    corpus = LocalCorpus(tmp_path / "コーパス")
    [doc] = corpus.documents
    assert "%" in doc.url and " " not in doc.url
    assert corpus.path_for(doc.url) == page.resolve()
    assert corpus.path_for(f"{doc.url}#top") == page.resolve()


async def test_japanese_query_ranks_relevant_document_first(corpus_dir: Path) -> None:
    results = await search(LocalSearchProvider(LocalCorpus(corpus_dir)), "価格転嫁 率")
    assert results[0].url.endswith("/pages/ja/price.html")
    assert "価格転嫁率" in results[0].snippet
    assert [r.rank for r in results] == list(range(1, len(results) + 1))
    assert all(r.provider == "local" and len(r.snippet) <= 200 for r in results)
    assert results[0].score > (results[1].score if len(results) > 1 else 0)


async def test_english_query_ranks_relevant_document_first(corpus_dir: Path) -> None:
    provider = LocalSearchProvider(corpus_dir)
    results = await search(provider, "cost pass-through rates for small businesses")
    assert results[0].url.endswith("/notes/pass.md")
    assert (await search(provider, "interest rate"))[0].url.endswith("/pages/en/rates.html")
    assert (await search(provider, "cat"))[0].url.endswith("/cats.txt")  # plural folded to singular


async def test_manifest_metadata_comes_through(corpus_dir: Path) -> None:
    write(corpus_dir / "manifest.yaml", MANIFEST)
    corpus = LocalCorpus(corpus_dir)
    assert corpus.topic == "中小企業の価格転嫁の現状"
    results = await search(LocalSearchProvider(corpus), "価格転嫁")
    top = results[0]
    assert top.url == "https://sme-price-survey.example/2024/autumn"
    assert top.title == "中小企業 価格転嫁 調査 2024年秋"
    assert (top.source_type, top.lang, top.published) == ("official", "ja", date(2024, 11, 29))
    rates = corpus.get("https://news.example/rates")
    assert rates is not None and rates.duplicate_of == "https://sme-price-survey.example/2024/autumn"
    assert rates.title == "Central bank holds rates"  # no manifest title: the page's own
    assert corpus.path_for("https://news.example/rates") == (corpus_dir / "pages/en/rates.html").resolve()
    # A manifest defines the corpus: files it does not list are not sources.
    assert corpus.get((corpus_dir / "cats.txt").resolve().as_uri()) is None


async def test_shift_jis_page_with_meta_charset(tmp_path: Path) -> None:
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
        "<title>下請取引の実態</title></head><body><p>下請事業者の約半数が価格交渉を申し入れた。</p>"
        "</body></html>"
    )
    write(tmp_path / "c/old.html", page.encode("cp932"))
    write(tmp_path / "c/euc.txt", "旧システムの文字コードはEUC-JPでした。\n".encode("euc-jp"))
    provider = LocalSearchProvider(tmp_path / "c")
    [hit] = await search(provider, "価格交渉")
    assert hit.title == "下請取引の実態"
    assert "価格交渉" in hit.snippet
    assert (await search(provider, "文字コード"))[0].url.endswith("/euc.txt")


async def test_time_range_is_relative_to_newest_document(tmp_path: Path) -> None:
    d = tmp_path / "c"
    for day, name in [("2024-11-29", "new"), ("2024-11-25", "week"), ("2024-09-01", "quarter")]:
        write(d / f"{name}.html", f'<title>{name}</title><meta name="date" content="{day}"><p>物価 {name}</p>')
    write(d / "undated.txt", "undated\n物価の話")
    provider = LocalSearchProvider(d)

    async def names(time_range: str | None) -> set[str]:
        return {r.title for r in await search(provider, "物価", time_range=time_range)}

    assert await names(None) == await names("all") == {"new", "week", "quarter", "undated"}
    assert await names("d") == await names("day") == {"new", "undated"}
    assert await names("w") == {"new", "week", "undated"}
    assert await names("month") == {"new", "week", "undated"}
    assert await names("y") == {"new", "week", "quarter", "undated"}
    with pytest.raises(InputError, match="time_range"):
        await names("fortnight")


async def test_empty_query_is_an_error_and_no_match_is_empty(corpus_dir: Path) -> None:
    provider = LocalSearchProvider(corpus_dir)
    with pytest.raises(InputError, match="empty"):
        await search(provider, "   ")
    assert await search(provider, "量子コンピュータ") == []
    assert await search(provider, "the of and") == []  # only stopwords
    assert len(await search(provider, "価格", max_results=1)) == 1
    with pytest.raises(InputError):
        await search(provider, "価格", max_results=0)


async def test_provider_satisfies_protocol(corpus_dir: Path) -> None:
    provider = LocalSearchProvider(corpus_dir)
    assert isinstance(provider, SearchProvider)
    assert provider.name == "local"
    assert await search(provider, "価格", region="jp-jp")  # region is accepted and ignored


async def test_long_text_is_chunked_for_sudachi(tmp_path: Path) -> None:
    filler = "地方経済の動向についての一般的な説明が続く。" * 4000  # ~260 KB of UTF-8, Sudachi's cap is 49 KB
    write(tmp_path / "c/long.txt", f"長い文書\n{filler}\n最後に半導体の話題。")
    write(tmp_path / "c/short.txt", "短い文書\n観光の話題。")
    results = await search(LocalSearchProvider(tmp_path / "c"), "半導体")
    assert [r.title for r in results] == ["長い文書"]
    assert "半導体" in results[0].snippet and len(results[0].snippet) <= 200


async def test_index_is_cached_per_directory_and_rebuilt_on_change(corpus_dir: Path) -> None:
    first = LocalSearchProvider(corpus_dir)
    assert LocalSearchProvider(corpus_dir).index() is first.index()
    page = corpus_dir / "cats.txt"
    page.write_text("Caring for dogs\nDogs need walks.\n", encoding="utf-8")
    os.utime(page, ns=(time.time_ns(), time.time_ns() + 10**9))
    fresh = LocalSearchProvider(corpus_dir)
    assert fresh.index() is not first.index()
    assert (await search(fresh, "dogs"))[0].title == "Caring for dogs"


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"corpus directory .*nope does not exist; pass --corpus DIR"):
        LocalCorpus(tmp_path / "nope")


def test_path_that_is_a_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a directory"):
        LocalCorpus(write(tmp_path / "file.txt", "text"))


@pytest.mark.parametrize("content", [None, "only.pdf", "empty.txt"])
def test_directory_without_usable_files(tmp_path: Path, content: str | None) -> None:
    d = tmp_path / "c"
    d.mkdir()
    if content:
        write(d / content, b"%PDF" if content.endswith(".pdf") else b"  \n")
    with pytest.raises(InputError, match="no usable files") as err:
        LocalCorpus(d)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("  - file: pages/ja/price.html\n", "url"),
        ("  - file: pages/ja/missing.html\n    url: https://x.example/\n", "does not exist"),
        ("  - file: pages/ja/price.html\n    url: https://x.example/\n    published: someday\n", "published"),
        ("  - file: pages/ja/price.html\n    url: https://x.example/\n    source_type: blog\n", "source_type"),
        ("  - file: ../outside.html\n    url: https://x.example/\n", "outside"),
        ("  - file: ignored.pdf\n    url: https://x.example/\n", "file type"),
        ("  - just a string\n", "mapping"),
    ],
)
def test_bad_manifest_entry_names_file_and_entry(corpus_dir: Path, entry: str, problem: str) -> None:
    write(corpus_dir.parent / "outside.html", "<p>x</p>")
    good = "  - file: cats.txt\n    url: https://cats.example/\n"
    manifest = write(corpus_dir / "manifest.yaml", f"topic: t\npages:\n{good}{entry}")
    with pytest.raises(InputError) as err:
        LocalCorpus(corpus_dir)
    message = str(err.value)
    assert str(manifest) in message and "pages[1]" in message and problem in message
    assert re.search(r"manifest\.yaml, line [5-7], column [35], pages\[1\]", message)  # the entry or its key
    assert "\n" not in message


def test_manifest_that_is_not_yaml(corpus_dir: Path) -> None:
    write(corpus_dir / "manifest.yaml", "pages: [unclosed\n")
    with pytest.raises(InputError, match=r"manifest\.yaml, line 2, column 1: not valid YAML"):
        LocalCorpus(corpus_dir)


def test_manifest_duplicate_url(corpus_dir: Path) -> None:
    write(
        corpus_dir / "manifest.yaml",
        "pages:\n  - file: cats.txt\n    url: https://a.example/\n"
        "  - file: notes/pass.md\n    url: https://a.example/\n",
    )
    with pytest.raises(InputError, match=r"pages\[1\].*listed twice"):
        LocalCorpus(corpus_dir)


JA_SENTENCES = [
    "中小企業の価格転嫁率は4割程度にとどまっている。",
    "労務費の上昇分を取引価格に反映できない企業が多い。",
    "政府は下請法の運用を強化し、発注者に協議を促している。",
    "地方の観光業では人手不足が深刻化している。",
    "日銀は金融政策の正常化を慎重に進める方針だ。",
    "物流の2024年問題で運送費が上がっている。",
]
EN_SENTENCES = [
    "The central bank kept interest rates unchanged this quarter.",
    "Labor shortages are hitting the tourism sector hard.",
    "Energy prices remained volatile through the winter.",
]


async def test_thousand_file_corpus_builds_and_searches(tmp_path: Path) -> None:
    rnd = random.Random(7)
    d = tmp_path / "big"
    for i in range(1000):
        pool, sep = (EN_SENTENCES, " ") if i % 4 == 0 else (JA_SENTENCES, "")
        paragraphs = "".join(f"<p>{sep.join(rnd.choices(pool, k=8))}</p>" for _ in range(6))
        write(d / f"s{i % 20}/doc{i:04d}.html", f"<title>Doc {i}</title><body>{paragraphs}</body>")
    write(d / "s0/needle.html", "<title>Needle</title><p>半導体の供給網を国内に戻す動きが広がる。</p>")
    started = time.perf_counter()
    provider = LocalSearchProvider(d)
    provider.index()
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    results = await search(provider, "半導体 供給網", max_results=5)
    search_s = time.perf_counter() - started
    assert len(provider.corpus) == 1001
    assert results[0].title == "Needle"
    assert len(await search(provider, "interest rates", max_results=20)) == 20
    assert build_s < 60 and search_s < 2, (build_s, search_s)
