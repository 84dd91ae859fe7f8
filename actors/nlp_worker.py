"""NlpWorker: a long-lived process that loads the NLP models once and analyses batches of texts.

Loading GiNZA costs ~2 s and 450-700 MB, so workers live for a whole run (or job) and are fed
batches; one worker per CPU, spread across nodes. Each call is single-threaded (GiNZA is not
thread-safe), so the pool spawns workers with ``max_concurrency=1``.
"""

from __future__ import annotations

import os

from pydantic import BaseModel

from core.runtime import current_node_id
from nlp.analysis import AnalysisInput, TextAnalysis, analyse_texts

WARM_UP = [
    AnalysisInput("令和6年9月の価格転嫁率は49.7%だった。", "ja"),
    AnalysisInput("Prices rose 3% in March 2025.", "en"),
]


class AnalysedBatch(BaseModel):
    node_id: str
    pid: int
    analyses: list[TextAnalysis]


class NlpWorker:
    def __init__(self) -> None:
        self.node_id = current_node_id()
        analyse_texts(WARM_UP)  # load the models now, not on the first real batch

    def analyse(self, items: list[AnalysisInput]) -> AnalysedBatch:
        return AnalysedBatch(node_id=self.node_id, pid=os.getpid(), analyses=analyse_texts(items))


__all__ = [
    "WARM_UP",
    "AnalysedBatch",
    "NlpWorker",
]
