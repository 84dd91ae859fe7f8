"""The transparency report (KATASHIRO OBS-002), as JSON for machines and Markdown for people.

It explains the run rather than its topic: what each agent was asked and did (queries, sources,
failures), how every report was scored (the arithmetic), why each consensus was chosen, which
sources back each claim, which citations were dropped, and how each conflict was read.
"""

from __future__ import annotations

import json
from typing import Any

from research.result import ConsensusResearchResult


def transparency_data(result: ConsensusResearchResult) -> dict[str, Any]:
    iterations = []
    for it in result.iterations:
        agents = [
            {
                "agentId": r.agent_id,
                "reportId": r.report_id,
                "focus": r.strategy.focus,
                "queries": r.queries,
                "decisions": r.decisions,
                "sources": [s.url for s in r.sources],
                "findings": len(r.findings),
                "failedSources": [f.model_dump(by_alias=True) for f in r.failures],
                "durationMs": r.duration_ms,
            }
            for r in it.agent_reports
        ]
        iterations.append(
            {
                "iteration": it.iteration,
                "context": {
                    "unresolvedQuestions": it.context.unresolved_questions,
                    "areasToDeepen": it.context.areas_to_deepen,
                    "focusQueries": it.context.focus_queries,
                    "coveredSources": len(it.context.covered_sources),
                },
                "agents": agents,
                "agentFailures": [f.model_dump(mode="json", by_alias=True) for f in it.agent_failures],
                "scores": [
                    {
                        "reportId": s.report_id,
                        "consistency": s.consistency_score,
                        "reliability": s.source_reliability_score,
                        "coverage": s.coverage_score,
                        "overall": s.overall_score,
                        "conflicts": len(s.conflicts),
                        "unverified": s.unverified_count,
                        "arithmetic": s.arithmetic,
                    }
                    for s in it.scores
                ],
                "selectedAgentId": it.selected_agent_id,
                "selectionReason": it.selection_reason,
                "retried": it.retried,
                "flaggedForReview": it.flagged_for_review,
                "sourceOverlap": it.source_overlap,
                "durationMs": it.duration_ms,
            }
        )
    return {
        "runId": result.run_id,
        "topic": result.metadata.topic,
        "config": result.metadata.config.model_dump(by_alias=True),
        "iterations": iterations,
        "stoppedEarly": result.stopped_early,
        "claims": [
            {
                "claimId": c.claim_id,
                "text": c.text,
                "confidence": c.confidence,
                "confidenceArithmetic": c.confidence_arithmetic,
                "supporting": [s.url for s in c.supporting],
                "contradicting": [s.url for s in c.contradicting],
                "independentOrigins": c.independent_origins,
            }
            for c in result.claims
        ],
        "conflictResolutions": [
            {
                "conflictId": d.conflict_id,
                "type": d.type,
                "key": d.statement2.key,
                "statement1": {"value": d.statement1.value, "source": d.statement1.source},
                "statement2": {"value": d.statement2.value, "source": d.statement2.source},
                "severity": d.severity,
                "confidence": d.confidence,
                "resolution": d.resolution,
                "status": "unresolved: both sides shown in the report",
            }
            for d in result.disputed
        ],
        "citationCheck": result.citation_check.model_dump(by_alias=True),
        "summary": {
            "writtenBy": result.executive_summary.written_by,
            "sentencesKept": result.executive_summary.sentences_kept,
            "sentencesRemoved": result.executive_summary.sentences_removed,
            "note": result.executive_summary.note,
        },
    }


def transparency_json(result: ConsensusResearchResult) -> str:
    return json.dumps(transparency_data(result), ensure_ascii=False, indent=2)


def transparency_markdown(result: ConsensusResearchResult) -> str:
    data = transparency_data(result)
    lines = [f"# Transparency report — {result.metadata.topic}", "", f"Run `{result.run_id}`.", ""]
    for it in data["iterations"]:
        lines += [f"## Iteration {it['iteration']}", ""]
        ctx = it["context"]
        if ctx["focusQueries"] or ctx["unresolvedQuestions"]:
            lines += ["Context given to the agents:", ""]
            lines += [f"- open question: {q}" for q in ctx["unresolvedQuestions"]]
            lines += [f"- area to deepen: {a}" for a in ctx["areasToDeepen"]]
            lines += [f"- focus query: {q}" for q in ctx["focusQueries"]]
            lines += [f"- sources already read (ranked last): {ctx['coveredSources']}", ""]
        lines += ["| agent | focus | queries | sources | findings | ms |", "|---|---|---|---|---|---|"]
        for a in it["agents"]:
            lines.append(
                f"| {a['agentId']} | {a['focus']} | {'; '.join(a['queries'])} | {len(a['sources'])} | "
                f"{a['findings']} | {a['durationMs']} |"
            )
        for a in it["agents"]:
            lines += [f"- agent {a['agentId']}: {d}" for d in a["decisions"]]
        for f in it["agentFailures"]:
            lines.append(
                f"\nAgent {f['agentId']} failed (attempt {f['attempt']}, {f['errorType']}, "
                f"{f['durationMs']} ms, last stage {f['lastStage'] or 'none'}): {f['error']}"
            )
        lines += ["", "Scores:", ""]
        lines += [
            f"- `{s['reportId']}`: {s['arithmetic']}; {s['conflicts']} conflict(s), "
            f"{s['unverified']} unverified finding(s)"
            for s in it["scores"]
        ]
        lines += [
            "",
            f"Decision: {it['selectionReason']}.",
            f"Source overlap between agents (mean Jaccard): {it['sourceOverlap']:.2f}.",
        ]
        if it["retried"]:
            lines.append("A majority of agents failed; the iteration was run again.")
        if it["flaggedForReview"]:
            lines.append("Flagged for review: every report's conflict rate exceeded the threshold.")
        lines.append("")
    if data["stoppedEarly"]:
        lines += [f"Stopped early: {data['stoppedEarly']}.", ""]
    lines += ["## Claims and their sources", ""]
    for c in data["claims"]:
        against = ", ".join(c["contradicting"]) or "none"
        lines.append(
            f"- `{c['claimId']}` {c['text']} — {c['confidenceArithmetic']}; supporting: "
            f"{', '.join(c['supporting']) or 'none'}; contradicting: {against}"
        )
    lines += ["", "## Conflict resolutions", ""]
    for d in data["conflictResolutions"]:
        lines.append(
            f"- {d['type']} `{d['key']}`: {d['statement1']['value']} ({d['statement1']['source']}) vs "
            f"{d['statement2']['value']} ({d['statement2']['source']}); severity {d['severity']}, "
            f"confidence {d['confidence']}; {d['resolution'] or 'no suggestion'}; {d['status']}"
        )
    check = data["citationCheck"]
    lines += ["", "## Citation check", "", f"{check['passed']} of {check['checked']} citations passed."]
    lines += [f"- dropped {d['url']} for `{d['claimId']}`: {d['reason']}" for d in check["dropped"]]
    summary = data["summary"]
    lines += ["", "## Executive summary check", "", f"Written by: {summary['writtenBy']}."]
    lines += [f"- removed: {s}" for s in summary["sentencesRemoved"]]
    if summary["note"]:
        lines.append(f"- note: {summary['note']}")
    return "\n".join(lines) + "\n"


__all__ = [
    "transparency_data",
    "transparency_json",
    "transparency_markdown",
]
