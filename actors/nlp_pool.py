"""A pool of :class:`NlpWorker` agents fed in batches; each batch goes to the least-loaded worker.

The pool object only holds worker handles, so it can be passed to other agents (the collector)
and used from there. It records which node analysed how much, for reports and benchmarks.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Sequence

from actors.nlp_worker import AnalysedBatch, NlpWorker
from core.runtime import Call, Handle, Runtime
from nlp.analysis import AnalysisInput, TextAnalysis

BATCH_CHARS = 2500  # ~0.6 s of NLP: small enough to balance 2-8 workers, large enough to amortise calls
WORKER_RESTARTS = 3  # a node lost now and then; a batch that kills its worker each time fails after that
# A batch not analysed after this long (100 times a batch's work) is sent to another worker as well: the
# first may be unable to run. Restarted after its node died, a worker needs a free CPU, and when the
# other workers hold every CPU left it waits for one forever, with the calls sent to it.
STALLED_S = 60.0


def batches(items: list[AnalysisInput], max_chars: int = BATCH_CHARS) -> list[list[int]]:
    """Indexes of ``items`` grouped so that each group holds about ``max_chars`` characters."""
    groups: list[list[int]] = []
    size = max_chars
    for i, item in enumerate(items):
        if size + len(item.text) > max_chars and (not groups or groups[-1]):
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(item.text)
    return [g for g in groups if g]


class NlpPool:
    def __init__(self, workers: list[Handle[NlpWorker]], stalled_s: float = STALLED_S) -> None:
        if not workers:
            raise ValueError("an NLP pool needs at least one worker")
        self.workers = list(workers)
        self.stalled_s = stalled_s
        # Characters queued per worker, keyed by id() in the process using the pool (so not pre-filled:
        # the pool is pickled into the collector, where the handles are new objects).
        self._load: defaultdict[int, int] = defaultdict(int)
        self.chars_by_node: Counter[str] = Counter()
        self.batches_by_node: Counter[str] = Counter()

    @classmethod
    def start(cls, runtime: Runtime, size: int) -> NlpPool:
        """``size`` workers of one CPU each, spread over the cluster's nodes; a worker whose node dies
        is started again on another, and the batch it held is analysed there (a worker keeps nothing
        but its loaded model)."""
        return cls(
            [
                runtime.spawn(NlpWorker, num_cpus=1, spread=True, max_concurrency=1, restarts=WORKER_RESTARTS)
                for _ in range(size)
            ]
        )

    async def analyse(self, raw_items: Sequence[tuple[str, str | None] | AnalysisInput]) -> list[TextAnalysis]:
        """Analyses in the order of ``items``; batches run in parallel across the workers."""
        items = [AnalysisInput(*item) for item in raw_items]
        groups = batches(items)
        done = await asyncio.gather(*(self._run([items[i] for i in group]) for group in groups))
        return [analysis for batch in done for analysis in batch.analyses]

    async def _run(self, batch: list[AnalysisInput]) -> AnalysedBatch:
        """Send one batch to the least-loaded worker. A worker that fails is dropped from the pool and the
        batch goes to another; a worker that holds it past ``stalled_s`` keeps it (it may only be busy)
        and another worker gets it too: the first answer wins. Only with no worker left does it fail."""
        chars = sum(len(item.text) for item in batch)
        error: BaseException | None = None
        sent: dict[asyncio.Future[AnalysedBatch], tuple[Handle[NlpWorker], Call[AnalysedBatch]]] = {}
        try:
            while True:
                holding = [worker for worker, _ in sent.values()]
                spare = [w for w in self.workers if not any(w is h for h in holding)]
                if spare:
                    worker = min(spare, key=lambda w: self._load[id(w)])
                    self._load[id(worker)] += chars
                    call = worker.call(NlpWorker.analyse, batch)
                    sent[asyncio.ensure_future(_settled(call))] = (worker, call)
                if not sent:
                    raise RuntimeError(f"every NLP worker failed; last error: {error}") from error
                timeout = self.stalled_s if len(spare) > 1 else None  # another worker left to try
                done, _ = await asyncio.wait(sent, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    worker, _ = sent.pop(future)
                    self._load[id(worker)] -= chars
                    if (error := future.exception()) is None:
                        result = future.result()
                        self.chars_by_node[result.node_id] += chars
                        self.batches_by_node[result.node_id] += 1
                        return result
                    if worker in self.workers:
                        self.workers.remove(worker)
        finally:
            for future, (worker, call) in sent.items():  # answered elsewhere, or the caller left
                call.cancel()
                future.cancel()
                self._load[id(worker)] -= chars

    def usage(self) -> dict[str, dict[str, int]]:
        return {
            node: {"batches": self.batches_by_node[node], "chars": chars} for node, chars in self.chars_by_node.items()
        }


async def _settled(call: Call[AnalysedBatch]) -> AnalysedBatch:
    """A call's result as a coroutine, for ``asyncio`` to wait on beside others."""
    return await call


__all__ = [
    "BATCH_CHARS",
    "STALLED_S",
    "WORKER_RESTARTS",
    "NlpPool",
    "batches",
]
