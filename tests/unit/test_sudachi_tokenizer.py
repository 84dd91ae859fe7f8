"""The one per-thread Sudachi tokenizer that search (mode B) and the router (mode C) share."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from core.text import tokenize as search_tokenize
from core.text.tokenize import sudachi_tokenizer
from router.text import normalise, tokenize


def test_one_tokenizer_per_thread_and_mode_over_one_dictionary() -> None:
    b, c = sudachi_tokenizer("B"), sudachi_tokenizer("C")
    assert sudachi_tokenizer("B") is b and sudachi_tokenizer("C") is c and b is not c
    other: list[Any] = []
    worker = threading.Thread(target=lambda: other.append(sudachi_tokenizer("B")))
    worker.start()
    worker.join()
    assert other[0] is not b  # a tokenizer is never shared between threads
    # Routing and searching in one process load the dictionary once.
    search_tokenize.tokenize("中小企業の価格転嫁")
    tokenize(normalise("ネットワーキングの設定"))
    assert search_tokenize._dictionary.cache_info().currsize == 1


def test_the_modes_cut_as_search_and_the_router_need() -> None:
    assert [m.surface() for m in sudachi_tokenizer("C").tokenize("中小企業")] == ["中小企業"]
    assert [m.surface() for m in sudachi_tokenizer("B").tokenize("中小企業")] == ["中小", "企業"]
    assert "企業" in search_tokenize.tokenize("中小企業の価格転嫁")
    assert [t.surface for t in tokenize(normalise("ネットワーキング"))] == ["ネットワーキング"]


def test_an_unknown_split_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(ValueError, match="not one of A, B, C"):
        sudachi_tokenizer("D")  # type: ignore[arg-type]
