"""``python:MODULE_OR_FILE:FUNCTION``: any Python function as the LLM (fakes, local models, gateways).

The function takes the ``LLMRequest`` and returns an ``LLMResponse``, a dict of that shape or a
plain ``str`` (the answer text); it may be sync (run in a thread) or async. It may also be an async
generator: each ``str`` it yields is a streamed text delta, and an ``LLMResponse`` or dict it yields
(last) carries tool calls, output or usage; ``complete`` joins the deltas. Responses may carry tool
calls (``tool_calls``), so a python provider can drive the tool loop. The client keeps only the
provider string and loads the function lazily in each process, so it pickles into Ray workers.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from core.errors import ConfigError, LLMError, MagiError
from core.llm.base import LLMRequest, LLMResponse
from core.llm.streaming import StreamEnd, StreamEvent, TextDelta

PREFIX = "python:"
FORMAT = "python:MODULE_OR_FILE:FUNCTION (e.g. python:my_pkg.fake_llm:answer or python:./fake_llm.py:answer)"


def parse_spec(provider: str) -> tuple[str, str]:
    """(module or file, function name) of a provider string; ``ConfigError`` if malformed."""
    rest = provider[len(PREFIX) :] if provider.startswith(PREFIX) else ""
    target, _, function = rest.rpartition(":")
    if not target or not function.isidentifier():
        raise ConfigError(f"LLM provider {provider!r} is not of the form {FORMAT}")
    return target, function


def _is_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def _load_file(path: Path) -> ModuleType:
    name = "_magi_llm_provider_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    if not path.is_file():
        raise ConfigError(f"LLM provider file {path} not found; expected {FORMAT}")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"LLM provider file {path} cannot be imported as Python; expected {FORMAT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so pickling/dataclasses inside the file work
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"importing LLM provider file {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _load_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"LLM provider module {name!r} not found ({exc}); expected {FORMAT} with MODULE importable "
            "from the current environment, or a path to a .py file"
        ) from exc
    except Exception as exc:
        raise ConfigError(f"importing LLM provider module {name!r} failed: {type(exc).__name__}: {exc}") from exc


def to_response(result: object, default_model: str) -> LLMResponse:
    """Normalise what a provider function returned."""
    if isinstance(result, LLMResponse):
        return result
    if isinstance(result, str):
        return LLMResponse(text=result, model=default_model)
    if isinstance(result, dict):
        try:
            return LLMResponse.model_validate({"model": default_model, **result})
        except ValidationError as exc:
            raise LLMError(f"LLM provider {default_model} returned a dict that is not an LLMResponse: {exc}") from exc
    raise LLMError(f"LLM provider {default_model} returned {type(result).__name__}; expected LLMResponse, dict or str")


class PythonClient:
    """``LLMClient`` calling a user function; pickles as its provider string (function reloaded lazily)."""

    def __init__(self, provider: str) -> None:
        target, self.function_name = parse_spec(provider)
        self.provider = provider
        # A relative file is resolved now, against this process's cwd, so other processes find it too.
        self.target = str(Path(target).absolute()) if _is_file(target) else target
        self._function: Callable[[LLMRequest], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"provider": self.provider, "function_name": self.function_name, "target": self.target}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._function = None

    def load(self) -> Callable[[LLMRequest], Any]:
        """The provider function, imported on first use in this process."""
        if self._function is None:
            is_file = _is_file(self.target)
            module = _load_file(Path(self.target)) if is_file else _load_module(self.target)
            function = getattr(module, self.function_name, None)
            if function is None or not callable(function):
                what = "file" if is_file else "module"
                raise ConfigError(
                    f"LLM provider {what} {self.target} has no function {self.function_name!r}; expected {FORMAT}"
                )
            self._function = function
        return self._function

    def roles(self) -> tuple[str, ...] | None:
        """The LLM roles the function's module says it answers (its ``ROLES``: prefixes such as
        ``"magi."``), or None when it does not say (then it is taken to answer every role)."""
        self.load()
        is_file = _is_file(self.target)
        module = _load_file(Path(self.target)) if is_file else _load_module(self.target)
        declared = getattr(module, "ROLES", None)
        return tuple(str(r) for r in declared) if isinstance(declared, tuple | list) else None

    async def complete(self, request: LLMRequest) -> LLMResponse:
        function = self.load()
        if inspect.isasyncgenfunction(function):
            async for event in self.stream(request):
                if isinstance(event, StreamEnd):
                    return event.response
        try:
            if inspect.iscoroutinefunction(function):
                result = await function(request)
            else:
                result = await asyncio.to_thread(function, request)
                if inspect.isawaitable(result):
                    result = await result
        except MagiError:
            raise
        except Exception as exc:
            raise LLMError(f"LLM provider {self.provider} raised {type(exc).__name__}: {exc}") from exc
        return to_response(result, self.provider)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Deltas of an async-generator provider as it yields them; other providers give one delta."""
        function = self.load()
        if not inspect.isasyncgenfunction(function):
            response = await self.complete(request)
            if response.text:
                yield TextDelta(response.text)
            yield StreamEnd(response)
            return
        pieces: list[str] = []
        final: object = None
        try:
            async for item in function(request):
                if isinstance(item, str):
                    if item:
                        pieces.append(item)
                        yield TextDelta(item)
                else:
                    final = item
        except MagiError:
            raise
        except Exception as exc:
            raise LLMError(f"LLM provider {self.provider} raised {type(exc).__name__}: {exc}") from exc
        response = to_response("".join(pieces) if final is None else final, self.provider)
        if not response.text and pieces:
            response = response.model_copy(update={"text": "".join(pieces)})
        yield StreamEnd(response)


__all__ = [
    "FORMAT",
    "PREFIX",
    "PythonClient",
    "parse_spec",
    "to_response",
]
