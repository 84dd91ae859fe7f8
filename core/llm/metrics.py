"""Metrics of every LLM call (by role and model) and of the cluster-wide limiter."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from core.errors import LLMError
from core.llm.base import LLMResponse
from core.llm.cost import call_cost
from core.telemetry.metrics import MetricSet
from core.telemetry.tracing import span

METRICS = MetricSet("llm")
CALLS = METRICS.counter("calls", "LLM calls answered, by role and model.", ("role", "model"))
ERRORS = METRICS.counter("errors", "LLM calls failed, by role, model and kind.", ("role", "model", "kind"))
LATENCY = METRICS.histogram("call_seconds", "Wall time of one LLM call, by role and model.", ("role", "model"))
INPUT_TOKENS = METRICS.counter("input_tokens", "Input tokens sent, by role and model.", ("role", "model"))
OUTPUT_TOKENS = METRICS.counter("output_tokens", "Output tokens received, by role and model.", ("role", "model"))
COST = METRICS.counter("cost_usd", "Cost of the calls in US dollars (priced models only).", ("role", "model"))
PERMITS_IN_USE = METRICS.gauge("limiter_permits_in_use", "LLM permits held by this process's calls.")
WAITERS = METRICS.gauge("limiter_waiters", "Calls of this process waiting for an LLM permit.")
PAUSES = METRICS.counter("limiter_pauses", "Cluster-wide pauses after a rate limit (429/529) reported here.")


def error_kind(exc: BaseException) -> str:
    """A category for an LLM failure: its HTTP status, a timeout, or the error's class."""
    if isinstance(exc, LLMError) and exc.status_code:
        return str(exc.status_code)
    if isinstance(exc, TimeoutError):
        return "timeout"
    return type(exc).__name__


def record_response(role: str, model: str, response: LLMResponse, seconds: float) -> None:
    """Count one answered call: latency, tokens, cost."""
    model = response.model or model
    CALLS.inc(role=role, model=model)
    LATENCY.observe(seconds, role=role, model=model)
    INPUT_TOKENS.inc(response.usage.input_tokens, role=role, model=model)
    OUTPUT_TOKENS.inc(response.usage.output_tokens, role=role, model=model)
    cost = call_cost(model, response.usage)
    if cost:
        COST.inc(cost, role=role, model=model)


@contextmanager
def observed_call(role: str, model: str) -> Iterator[None]:
    """Span and error count around one call (its answer is counted by :func:`record_response`)."""
    started = time.perf_counter()
    with span("llm.call", role=role, model=model):
        try:
            yield
        except Exception as exc:
            ERRORS.inc(role=role, model=model, kind=error_kind(exc))
            LATENCY.observe(time.perf_counter() - started, role=role, model=model)
            raise


__all__ = [
    "CALLS",
    "COST",
    "ERRORS",
    "INPUT_TOKENS",
    "LATENCY",
    "OUTPUT_TOKENS",
    "PAUSES",
    "PERMITS_IN_USE",
    "WAITERS",
    "error_kind",
    "observed_call",
    "record_response",
]
