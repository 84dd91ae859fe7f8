"""A corpus folder is hostile input: each attack is set up for real, then the corpus (and the local page
reader) must end cleanly, leave the bad file out, count it, and never show what it points at."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.doctor import check_local_search
from core.errors import InputError
from core.settings import load_settings
from scrapers.errors import FetchError
from scrapers.fetch import Fetcher, FetchPolicy
from scrapers.search.corpus_files import CorpusLimits
from scrapers.search.factory import corpus_limits, open_search
from scrapers.search.local import _LRU, LocalCorpus, LocalSearchProvider
from scrapers.settings import FetchSettings, SearchSettings

GOOD = "Cost pass-through\nSmall firms struggle to pass rising costs on to their customers.\n"
HANG_GUARD_S = 60  # far above any real build here: only tells a blocked reader from a slow one


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.txt").write_text(GOOD, encoding="utf-8")
    return root


def _finishes(work: Callable[[], Any]) -> Any:
    """Run ``work`` in a thread; fail (instead of hanging the suite) if it blocks."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "the corpus reader blocked"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _urls(corpus: LocalCorpus) -> set[str]:
    return {Path(d.path).name for d in corpus.documents}


def test_a_fifo_named_like_a_page_is_skipped_without_blocking(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    os.mkfifo(root / "pipe.txt")  # opening it for reading would wait for a writer forever
    corpus = _finishes(lambda: LocalCorpus(root))
    assert _urls(corpus) == {"good.txt"}
    assert corpus.skipped == {"not_regular": 1}


def test_a_socket_is_skipped(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "s.md"))
        corpus = _finishes(lambda: LocalCorpus(root))
    finally:
        server.close()
    assert _urls(corpus) == {"good.txt"} and corpus.skipped == {"not_regular": 1}


def test_a_symlink_to_etc_passwd_is_skipped_counted_and_never_searchable(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "sub").mkdir()
    (root / "sub" / "up.md").symlink_to("../../outside.md")
    (tmp_path / "outside.md").write_text("# secret notes\nroot password here\n", encoding="utf-8")
    (root / "inside.txt").symlink_to(root / "good.txt")  # a link that stays inside is a page
    corpus = LocalCorpus(root)
    assert _urls(corpus) == {"good.txt", "inside.txt"}
    assert corpus.skipped == {"outside_root": 2}
    provider = LocalSearchProvider(corpus)
    hits = provider.search_sync("root password nologin bin bash secret")
    assert all("passwd" not in h.url and "outside" not in h.url and "root" not in h.snippet for h in hits)


def test_a_symlinked_folder_leading_out_is_not_walked(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "etc").symlink_to("/etc")
    (root / "everything").symlink_to("/")
    corpus = LocalCorpus(root)
    assert _urls(corpus) == {"good.txt"}


def test_dangling_symlinks_and_loops_are_skipped_not_a_crash(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "gone.txt").symlink_to(tmp_path / "missing.txt")
    (root / "deep").mkdir()
    (root / "deep" / "gone.html").symlink_to("nowhere.html")
    (root / "loop.md").symlink_to(root / "loop.md")
    corpus = LocalCorpus(root)
    assert _urls(corpus) == {"good.txt"}
    assert corpus.skipped == {"dangling": 3}


def test_a_50_mb_text_file_is_skipped_by_the_cap_without_being_read(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    with (root / "huge.txt").open("wb") as file:
        line = b"pass-through costs small firms " * 32 + b"\n"
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            file.write(line)
    assert (root / "huge.txt").stat().st_size > 50 * 1024 * 1024
    tracemalloc.start()
    try:
        corpus = LocalCorpus(root)
        LocalSearchProvider(corpus).search_sync("costs")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _urls(corpus) == {"good.txt"} and corpus.skipped == {"too_large": 1}
    assert peak < 5 * 1024 * 1024  # far below the file: it was never loaded


def test_the_size_cap_is_a_search_setting(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "medium.txt").write_text("costs " * 1000, encoding="utf-8")
    settings = load_settings(overrides={"search": {"corpus_dir": str(root), "corpus_max_file_bytes": 2048}})
    corpus = open_search(settings).resolver
    assert corpus is not None and _urls(corpus) == {"good.txt"} and corpus.skipped == {"too_large": 1}


def test_an_elf_binary_renamed_txt_is_skipped_and_counted(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    executable = shutil.which("true") or "/bin/true"
    shutil.copyfile(executable, root / "tool.txt")
    (root / "nul.md").write_bytes(b"# title\n\x00\x00\x00 costs")
    corpus = LocalCorpus(root)
    assert _urls(corpus) == {"good.txt"} and corpus.skipped == {"binary": 2}


def test_a_manifest_leading_outside_or_too_large_is_refused(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "manifest.yaml").symlink_to("/etc/passwd")
    with pytest.raises(InputError, match=r"manifest .* outside the corpus folder") as outside:
        LocalCorpus(root)
    assert "root:" not in str(outside.value)
    (root / "manifest.yaml").unlink()
    (root / "manifest.yaml").write_text("pages: []\n# " + "x" * 4096 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest .* larger than 2048 bytes"):
        LocalCorpus(root, CorpusLimits(max_file_bytes=2048))
    (root / "manifest.yaml").unlink()
    os.mkfifo(root / "manifest.yaml")
    assert _urls(_finishes(lambda: LocalCorpus(root))) == {"good.txt"}


def test_too_many_files_is_a_clear_error(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    for i in range(3):
        (root / f"page{i}.txt").write_text(GOOD, encoding="utf-8")
    with pytest.raises(InputError, match=r"more than 3 files .*search\.corpus_max_files"):
        LocalCorpus(root, CorpusLimits(max_files=3))
    assert len(LocalCorpus(root, CorpusLimits(max_files=4))) == 4


def test_too_many_bytes_in_all_is_a_clear_error(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "more.txt").write_text("costs " * 400, encoding="utf-8")
    with pytest.raises(InputError, match=r"more than 2048 bytes .*search\.corpus_max_total_bytes"):
        LocalCorpus(root, CorpusLimits(max_total_bytes=2048))
    settings = load_settings(overrides={"search": {"corpus_dir": str(root), "corpus_max_total_bytes": 4096}})
    assert (
        corpus_limits(SearchSettings.of(settings)).max_total_bytes == 4096
        and len(LocalCorpus(root, corpus_limits(SearchSettings.of(settings)))) == 2
    )


def test_an_exhausted_budget_names_the_folder_and_the_budget(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    with pytest.raises(InputError, match=rf"{root}.* longer than 1e-09 s .*corpus_build_budget_s"):
        LocalCorpus(root, CorpusLimits(budget_s=1e-9))


def test_the_whole_disk_ends_in_a_clean_error() -> None:
    """``/`` holds far more than a corpus may: the walk stops at the first cap it reaches."""
    with pytest.raises(InputError, match=r"corpus directory / (has more than|took longer)"):
        _finishes(lambda: LocalCorpus("/", CorpusLimits(max_files=200, budget_s=30)))


def test_a_slow_build_does_not_block_other_keys() -> None:
    """The cache lock is not held while a value is built: another corpus is served meanwhile."""
    cache = _LRU()
    release, started = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait()
        return "slow"

    thread = threading.Thread(target=lambda: cache.get(("slow", ()), slow), daemon=True)
    thread.start()
    assert started.wait(HANG_GUARD_S)
    try:
        assert _finishes(lambda: cache.get(("fast", ()), lambda: "fast")) == "fast"
    finally:
        release.set()
        thread.join(HANG_GUARD_S)
    assert cache.get(("slow", ()), lambda: "rebuilt") == "slow"  # built once, then cached


async def test_a_page_turned_into_a_fifo_after_indexing_fails_to_fetch_without_blocking(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "later.txt").write_text(GOOD, encoding="utf-8")
    (root / "elf.txt").write_text(GOOD, encoding="utf-8")
    corpus = LocalCorpus(root)
    later, elf = (root / "later.txt").as_uri(), (root / "elf.txt").as_uri()
    (root / "later.txt").unlink()
    os.mkfifo(root / "later.txt")
    (root / "elf.txt").write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 64)
    fetcher = Fetcher(local=corpus, policy=FetchPolicy.of(FetchSettings.of(load_settings())))
    try:
        with pytest.raises(FetchError, match="not a regular file") as fifo:
            await fetcher.fetch(later)
        assert fifo.value.kind == "local_read"
        with pytest.raises(FetchError, match="binary") as binary:
            await fetcher.fetch(elf)
        assert binary.value.kind == "binary"
        page = await fetcher.fetch((root / "good.txt").as_uri())
        assert "Small firms" in page.text
    finally:
        await fetcher.aclose()


def test_doctor_reports_what_the_corpus_left_out(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    os.mkfifo(root / "pipe.txt")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    settings = load_settings(overrides={"search": {"corpus_dir": str(root)}})
    assert corpus_limits(SearchSettings.of(settings)) == CorpusLimits()
    check = _finishes(lambda: check_local_search(settings))
    assert check.status == "ok"
    assert "1 documents" in check.detail and "2 skipped" in check.detail
    assert "1 not a regular file" in check.detail and "1 symlink leading outside" in check.detail


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(document.domain)",
        " JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "https://",
        "//evil.example/x",
        "https://a.example/x y",
    ],
)
def test_a_manifest_url_that_is_not_a_web_address_is_refused(tmp_path: Path, url: str) -> None:
    """Issue 21 (1): a manifest URL is shown as a link on the research page; only http(s) may pass."""
    root = _corpus(tmp_path)
    (root / "manifest.yaml").write_text(
        yaml.safe_dump({"pages": [{"file": "good.txt", "url": url}]}, allow_unicode=True), encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"manifest .*url: .*must be an http:// or https:// address"):
        LocalCorpus(root)
    (root / "manifest.yaml").write_text(
        yaml.safe_dump({"pages": [{"file": "good.txt", "url": "https://a.example/good"}]}), encoding="utf-8"
    )
    assert {d.url for d in LocalCorpus(root).documents} == {"https://a.example/good"}
