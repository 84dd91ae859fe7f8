from pathlib import Path

import trafilatura
import yaml

from scrapers.near_duplicates import NearDuplicateIndex

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def test_syndicated_copies_in_the_corpus_are_found_and_nothing_else() -> None:
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    index = NearDuplicateIndex()
    found = {}
    for page in manifest["pages"]:  # originals come first in the manifest? not assumed: check both ways
        text = trafilatura.extract((CORPUS / page["file"]).read_text(encoding="utf-8"))
        index.add(page["url"], text, str(page["published"]) if page.get("published") else None)
    for page in manifest["pages"]:
        original = index.original_of(page["url"])
        if original:
            found[page["url"]] = original
    expected = {p["url"]: p["duplicate_of"] for p in manifest["pages"] if p.get("duplicate_of")}
    assert found == expected  # the earlier published page is the original, as the manifest says


def test_unrelated_and_short_texts() -> None:
    index = NearDuplicateIndex()
    assert index.add("a", "中小企業の価格転嫁率は49.7%だった。" * 5) is None
    assert index.add("b", "Wage growth in Osaka reached 3.9 percent in spring.") is None
    assert index.add("c", "中小企業の価格転嫁率は49.7%だった。" * 5 + "追記。") == "a"
    assert index.add("d", "") is None


def test_the_original_does_not_depend_on_which_page_arrived_first() -> None:
    text = "中小企業の価格転嫁率は49.7%だった。" * 5
    pages = [
        ("https://b.example/copy", text + "転載。"),
        ("https://a.example/news", text),
        ("https://c.example/other", "Wage growth in Osaka reached 3.9 percent in spring."),
        ("https://d.example/copy2", text + "追記。"),
    ]
    outcomes = []
    for order in (pages, pages[::-1], [pages[2], pages[0], pages[3], pages[1]]):
        index = NearDuplicateIndex()
        for url, body in order:
            index.add(url, body)
        outcomes.append({url: index.original_of(url) for url, _ in pages})
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert outcomes[0] == {
        "https://b.example/copy": "https://a.example/news",
        "https://a.example/news": None,
        "https://c.example/other": None,
        "https://d.example/copy2": "https://a.example/news",
    }


def test_the_earlier_published_page_is_the_original_whatever_its_url() -> None:
    text = "中小企業の価格転嫁率は49.7%だった。" * 5
    for reverse in (False, True):
        index = NearDuplicateIndex()
        pages = [("https://a.example/reprint", "2024-12-02"), ("https://z.example/news", "2024-11-29")]
        for url, published in pages[::-1] if reverse else pages:
            index.add(url, text, published)
        assert index.original_of("https://a.example/reprint") == "https://z.example/news"
        assert index.original_of("https://z.example/news") is None
