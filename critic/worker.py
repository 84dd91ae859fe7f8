"""CriticWorker: a resident judge; asks the LLM for K independent judgements of one idea at a time.

The critic's workers are long-lived (critic/engine.py: ``WorkerPool``), shared by every run and
replica; each judgement brings the LLM settings it runs with, and the worker keeps one client per
configuration. Thin on purpose: the prompt comes ready from :mod:`critic.engine`, and all scoring
happens there (pure functions). The worker only calls the LLM (K samples at once), retries failed
calls with the platform's backoff (``llm.max_retries``, ``llm.backoff_initial_s`` ->
``llm.backoff_max_s``: 2 retries, 1 s -> 10 s by default) and reports each call's usage and its
process's peak memory.
"""

from __future__ import annotations

import asyncio
import resource
import time

from core.errors import CassetteMissError, LLMError, LLMOutputError, first_line
from core.llm.base import LLMClient, LLMRequest, LLMResponse, Usage, generate
from core.llm.factory import make_llm, provider_of
from core.retry import backoff_delay, retry
from core.settings import LLMSettings
from critic.models import CallUsage, IdeaJudgement, JudgeRequest, JudgeResult, SampleResult

ROLE = "critic.worker"
CLIENTS_KEPT = 4  # LLM configurations a worker keeps a client for (one in a deployment; tests use more)


class _Recorder:
    """Keeps the usage of every response (repairs and retries included)."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.calls: list[CallUsage] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        response = await self.inner.complete(request)
        self.calls.append(CallUsage(model=response.model or request.model or "", usage=response.usage))
        return response


def peak_rss_bytes() -> int:
    """Peak resident memory of this process (Linux reports kilobytes)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def current_rss_bytes() -> int:
    """Resident memory of this process now (from /proc; 0 where that is unavailable)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


class _Judge:
    """One LLM configuration's client, and whether its provider adapter retries on its own."""

    def __init__(self, llm: LLMSettings) -> None:
        self.llm = llm
        client = make_llm(llm, ROLE)
        if client is None:
            raise LLMError("CriticWorker needs an LLM; set MAGI_LLM_PROVIDER (the engine checks this first)")
        self.client = client
        # The HTTP adapters retry on their own (same settings); retrying here too would square the attempts.
        self.provider_retries = bool(getattr(provider_of(client), "retries_itself", False))

    def retryable(self, exc: Exception) -> bool:
        if self.provider_retries or isinstance(exc, LLMOutputError | CassetteMissError):
            return False
        return isinstance(exc, LLMError)

    async def sample(self, request: JudgeRequest, index: int, recorder: _Recorder) -> SampleResult:
        """One judgement; its tokens are those of all its calls (a repair turn included)."""
        llm = self.llm
        attempts = 0

        async def attempt() -> IdeaJudgement:
            nonlocal attempts
            attempts += 1
            generated = await generate(
                recorder,
                system=request.system,
                messages=request.messages[index],
                output_type=IdeaJudgement,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                role=ROLE,
            )
            assert generated.parsed is not None
            return generated.parsed

        try:
            judgement = await retry(
                attempt,
                attempts=llm.max_retries + 1,
                retryable=self.retryable,
                delay=lambda n, _exc: backoff_delay(n, llm.backoff_initial_s, llm.backoff_max_s),
            )
        except Exception as exc:
            return SampleResult(sample=index + 1, error=first_line(exc, 300), attempts=attempts)
        used = sum((c.usage for c in recorder.calls), Usage())
        tokens = (
            used.input_tokens + used.output_tokens + used.cache_read_input_tokens + used.cache_creation_input_tokens
        )
        return SampleResult(sample=index + 1, judgement=judgement, tokens=tokens, attempts=attempts)


class CriticWorker:
    """A resident judge: ``judge`` one idea's samples with the LLM settings the run brings."""

    def __init__(self) -> None:
        self._judges: list[_Judge] = []  # most recently used last
        self._in_flight = 0

    def _judge_for(self, llm: LLMSettings) -> _Judge:
        for index, judge in enumerate(self._judges):
            if judge.llm == llm:
                self._judges.append(self._judges.pop(index))
                return judge
        built = _Judge(llm)
        self._judges = [*self._judges[-(CLIENTS_KEPT - 1) :], built]
        return built

    async def judge(self, request: JudgeRequest, llm: LLMSettings) -> JudgeResult:
        """Every sample of one idea, at once; a sample that fails carries its error, the others stand."""
        started = time.monotonic()
        judge = self._judge_for(llm)
        recorders = [_Recorder(judge.client) for _ in request.messages]
        self._in_flight += 1
        try:
            samples = await asyncio.gather(*(judge.sample(request, i, r) for i, r in enumerate(recorders)))
        finally:
            self._in_flight -= 1
        return JudgeResult(
            idea_id=request.idea_id,
            samples=list(samples),
            calls=[call for r in recorders for call in r.calls],
            duration_ms=int((time.monotonic() - started) * 1000),
            peak_rss_bytes=peak_rss_bytes(),
        )

    async def in_flight(self) -> int:
        """Ideas being judged here now (an upgrade retires an old worker only when it has none)."""
        return self._in_flight

    def memory(self) -> dict[str, int]:
        """This worker's resident memory now and at its peak, in bytes (benchmarks)."""
        return {"rss_bytes": current_rss_bytes(), "peak_rss_bytes": peak_rss_bytes()}


__all__ = [
    "CLIENTS_KEPT",
    "ROLE",
    "CriticWorker",
    "current_rss_bytes",
    "peak_rss_bytes",
]
