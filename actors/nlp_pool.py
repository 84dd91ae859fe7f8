"""A pool of :class:`NlpWorker` agents fed in batches; each batch goes to the least-loaded worker.

The pool object only holds worker handles, so it can be passed to other agents (the collector)
and used from there. It records which node analysed how much, for reports and benchmarks.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Sequence

from actors.nlp_worker import AnalysedBatch, NlpWorker
from core.runtime import Handle, Runtime
from nlp.analysis import AnalysisInput, TextAnalysis

BATCH_CHARS = 2500  # ~0.6 s of NLP: small enough to balance 2-8 workers, large enough to amortise calls
WORKER_RESTARTS = 3  # a node lost now and then; a batch that kills its worker each time fails after that


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
    def __init__(self, workers: list[Handle[NlpWorker]]) -> None:
        if not workers:
            raise ValueError("an NLP pool needs at least one worker")
        self.workers = list(workers)
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
        """Send one batch to the least-loaded worker. A worker that fails is dropped from the pool
        and the batch goes to another; only when no worker is left does the batch fail."""
        chars = sum(len(item.text) for item in batch)
        error: BaseException | None = None
        while self.workers:
            worker = min(self.workers, key=lambda w: self._load[id(w)])
            self._load[id(worker)] += chars
            try:
                result = await worker.call(NlpWorker.analyse, batch)
            except Exception as exc:
                error = exc
                if worker in self.workers:
                    self.workers.remove(worker)
                continue
            finally:
                self._load[id(worker)] -= chars
            self.chars_by_node[result.node_id] += chars
            self.batches_by_node[result.node_id] += 1
            return result
        raise RuntimeError(f"every NLP worker failed; last error: {error}") from error

    def usage(self) -> dict[str, dict[str, int]]:
        return {
            node: {"batches": self.batches_by_node[node], "chars": chars} for node, chars in self.chars_by_node.items()
        }


__all__ = [
    "BATCH_CHARS",
    "WORKER_RESTARTS",
    "NlpPool",
    "batches",
]
