"""A pool of :class:`NlpWorker` agents fed in batches; each idle worker pulls the next batch.

The pool object only holds worker handles, so it can be passed to other agents (the collector)
and used from there. It records which node analysed how much, for reports and benchmarks.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from actors.nlp_worker import AnalysedBatch, NlpWorker
from core.runtime import Runtime, acall
from nlp.analysis import TextAnalysis

BATCH_CHARS = 4000  # ~1.5 s of GiNZA: small enough to balance 2-8 workers, large enough to amortise calls


def batches(items: list[tuple[str, str | None]], max_chars: int = BATCH_CHARS) -> list[list[int]]:
    """Indexes of ``items`` grouped so that each group holds about ``max_chars`` characters."""
    groups: list[list[int]] = []
    size = max_chars
    for i, (text, _) in enumerate(items):
        if size + len(text) > max_chars and (not groups or groups[-1]):
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += len(text)
    return [g for g in groups if g]


class NlpPool:
    def __init__(self, workers: list[Any]) -> None:
        if not workers:
            raise ValueError("an NLP pool needs at least one worker")
        self.workers = workers
        self.chars_by_node: Counter[str] = Counter()
        self.batches_by_node: Counter[str] = Counter()

    @classmethod
    def start(cls, runtime: Runtime, size: int) -> NlpPool:
        """``size`` workers of one CPU each, spread over the cluster's nodes."""
        return cls([runtime.spawn(NlpWorker, num_cpus=1, spread=True, max_concurrency=1) for _ in range(size)])

    async def analyse(self, items: list[tuple[str, str | None]]) -> list[TextAnalysis]:
        """Analyses in the order of ``items``. A worker that fails hands its batch back and is
        dropped from the pool; only when no worker is left does the call fail."""
        pending = batches(items)
        results: list[TextAnalysis | None] = [None] * len(items)
        errors: list[BaseException] = []

        async def drain(worker: Any) -> None:
            while pending:
                group = pending.pop(0)
                try:
                    batch: AnalysedBatch = await acall(worker, "analyse", [items[i] for i in group])
                except Exception as exc:
                    pending.insert(0, group)
                    errors.append(exc)
                    if worker in self.workers:
                        self.workers.remove(worker)
                    return
                for i, analysis in zip(group, batch.analyses, strict=True):
                    results[i] = analysis
                self.chars_by_node[batch.node_id] += sum(len(items[i][0]) for i in group)
                self.batches_by_node[batch.node_id] += 1

        while pending and self.workers:  # a batch handed back late is picked up by a survivor
            await asyncio.gather(*(drain(w) for w in list(self.workers)))
        if pending:
            raise RuntimeError(f"every NLP worker failed; last error: {errors[-1]}") from errors[-1]
        return [r for r in results if r is not None]

    def usage(self) -> dict[str, dict[str, int]]:
        return {node: {"batches": self.batches_by_node[node], "chars": chars}
                for node, chars in self.chars_by_node.items()}
