"""The research engine through the in-process runtime: the same coordination code, no Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ResearchError
from core.events import AgentCompleted, ListSink
from core.runtime import InProcessRuntime
from core.settings import load_settings
from research.engine import run_research

PAGE = """<html lang="ja"><head><meta charset="utf-8"><title>{title}</title></head><body><article>
<h1>{title}</h1><p>{body}</p></article></body></html>"""


def write_corpus(root: Path) -> Path:
    bodies = [
        "2024年9月の調査では、中小企業の価格転嫁率は49.7%となり、前回から3.2ポイント上昇した。",
        "労務費の価格転嫁率は44.7%にとどまり、原材料費の51.8%を下回った。",
        "トラック運送業の価格転嫁率は34.2%で、全業種の中で最も低かった。",
        "令和7年3月の調査では価格転嫁率が52.4%となり、初めて5割を超えた。",
    ]
    for i, body in enumerate(bodies):
        (root / f"page{i}.html").write_text(PAGE.format(title=f"価格転嫁の調査 {i}", body=body * 3), encoding="utf-8")
    return root


def test_two_agents_in_process(tmp_path: Path) -> None:
    settings = load_settings(corpus_dir=write_corpus(tmp_path), research_agents=2, nlp_workers=1)
    runtime = InProcessRuntime()
    events = ListSink()
    try:
        result = run_research("中小企業の価格転嫁率", settings, runtime, events)
    finally:
        runtime.shutdown()
    assert {r.agent_id for r in result.agent_reports} == {1, 2}
    assert len(result.sources) == 4 and all(s.url.startswith("file://") for s in result.sources)
    assert any("49.7%" in f.text for f in result.findings)
    assert result.collection is not None and result.collection.urls_fetched_more_than_once == 0
    assert result.collection.unique_urls == 4 and result.collection.urls_requested == 8
    assert sum(isinstance(e, AgentCompleted) and e.success for e in events.events) == 2


def test_timeouts_in_process_are_a_typed_error(tmp_path: Path) -> None:
    settings = load_settings(corpus_dir=write_corpus(tmp_path), research_agents=2, nlp_workers=1,
                             research_agent_timeout_s=0.001)
    runtime = InProcessRuntime()
    try:
        with pytest.raises(ResearchError, match="all 2 research agents failed"):
            run_research("価格転嫁", settings, runtime, ListSink())
    finally:
        runtime.shutdown()
