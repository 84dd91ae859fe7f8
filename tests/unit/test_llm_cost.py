"""Costs: the bundled price list, per-call cost, unknown models, UsageMeter totals."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.llm import LLMResponse, Usage, UsageMeter, call_cost
from core.llm.cost import PRICES_PATH, load_prices

ONE_MILLION_EACH = Usage(
    input_tokens=1_000_000,
    output_tokens=1_000_000,
    cache_creation_input_tokens=1_000_000,
    cache_read_input_tokens=1_000_000,
)


def test_bundled_prices_are_valid_and_sourced() -> None:
    prices = load_prices(PRICES_PATH)
    assert prices.version == 1 and "claude-sonnet-4-6" in prices.models
    for name, price in prices.models.items():
        assert price.source.startswith("https://"), name
        assert price.output >= price.input > price.cache_read, name


def test_call_cost_sums_every_kind_of_token() -> None:
    sonnet = load_prices().models["claude-sonnet-4-6"]
    expected = sonnet.input + sonnet.output + sonnet.cache_write + sonnet.cache_read
    assert call_cost("claude-sonnet-4-6", ONE_MILLION_EACH) == pytest.approx(expected)
    assert call_cost("claude-sonnet-4-6", Usage(input_tokens=2000, output_tokens=100)) == pytest.approx(
        (2000 * sonnet.input + 100 * sonnet.output) / 1e6
    )


def test_unknown_model_costs_unknown_not_zero() -> None:
    assert call_cost("my-local-llama", ONE_MILLION_EACH) is None
    meter = UsageMeter()
    meter.add(LLMResponse(model="claude-haiku-4-5", usage=Usage(input_tokens=1000)))
    assert meter.cost_usd == pytest.approx(0.001)
    meter.add(LLMResponse(model="my-local-llama", usage=Usage(input_tokens=5)))
    summary = meter.summary()
    assert meter.cost_usd is None and summary.cost_usd == "unknown" and summary.cost_text() == "unknown"
    assert summary.priced_cost_usd == pytest.approx(0.001) and summary.unpriced_models == ["my-local-llama"]
    assert summary.model_dump(by_alias=True)["costUsd"] == "unknown"


def test_meter_totals_across_threads_and_pickles() -> None:
    meter = UsageMeter()
    response = LLMResponse(model="claude-opus-4-6", usage=Usage(input_tokens=100, output_tokens=10))

    def work() -> None:
        for _ in range(250):
            meter.add(response)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    summary = meter.summary()
    assert (summary.calls, summary.input_tokens, summary.output_tokens) == (1000, 100_000, 10_000)
    assert summary.cost_usd == pytest.approx(1000 * (100 * 5 + 10 * 25) / 1e6)
    copy = pickle.loads(pickle.dumps(meter))
    copy.add(response)
    assert copy.calls == 1001 and meter.calls == 1000


def test_a_broken_price_file_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "prices.yaml"
    bad.write_text("version: 1\nmodels:\n  m:\n    input: 1\n    output: -2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"prices.yaml is invalid \(models\.m\.output: .*greater than or equal"):
        load_prices(bad)
    bad.write_text("version: 2\nmodels: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"version: Input should be 1"):
        load_prices(bad)
