"""NlpWorker: a long-lived process that loads the NLP models once and analyses batches of texts.

Loading GiNZA costs ~2 s and 450-700 MB, so workers live for a whole run (or job, or a Serve replica's
life) and are fed batches; one worker per CPU, spread across nodes. Models load on the first batch that
needs them: a run whose analyses all come from the cache never starts GiNZA. Each call is single-threaded (GiNZA is not
thread-safe), so the pool spawns workers with ``max_concurrency=1``.
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from core.runtime import current_node_id
from nlp.analysis import AnalysisInput, TextAnalysis, analyse_texts
from nlp.pipelines import loaded_pipelines


class AnalysedBatch(BaseModel):
    node_id: str
    pid: int
    analyses: list[TextAnalysis]


class NlpWorker:
    def __init__(self) -> None:
        self.node_id = current_node_id()

    def loaded(self) -> list[str]:
        """Languages whose models this worker has loaded."""
        return loaded_pipelines()

    def analyse(self, items: list[AnalysisInput]) -> AnalysedBatch:
        return AnalysedBatch(node_id=self.node_id, pid=os.getpid(), analyses=analyse_texts(items))


__all__ = [
    "AnalysedBatch",
    "NlpWorker",
]
