"""Scoring the router on a labelled set: accuracy per field, per-class precision/recall, confusion.

A set is JSON Lines of ``{query, sessionId, agent, category, requestType, language}``; lines are
routed in order, each session carrying its previous request type, so follow-ups are scored as a
visitor would meet them. Used by ``benchmarks/router_eval.py`` and the quality test.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.errors import InputError
from router.route import Router

FIELDS = ("agent", "category", "requestType", "language")


class LabelledQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: str
    session_id: str = Field(alias="sessionId")
    agent: str
    category: str
    request_type: str | None = Field(alias="requestType")
    language: str
    tags: list[str] = Field(default_factory=list)


def read_set(paths: Iterable[Path]) -> list[LabelledQuery]:
    items = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append(LabelledQuery.model_validate_json(line))
            except ValueError as exc:
                raise InputError(f"{path}:{number}: not a labelled query ({exc}); see tests/data/router") from exc
    return items


def _label(value: str | None) -> str:
    return "null" if value is None else value


def evaluate(router: Router, items: list[LabelledQuery]) -> dict[str, Any]:
    """Route every item (sessions in memory) and compare with its labels."""
    previous: dict[str, str | None] = {}
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    errors = []
    for item in items:
        result = router.route(item.query, previous.get(item.session_id))
        if result.request_type is not None:
            previous[item.session_id] = result.request_type
        got = {
            "agent": result.agent,
            "category": result.category,
            "requestType": _label(result.request_type),
            "language": result.language,
        }
        want = {
            "agent": item.agent,
            "category": item.category,
            "requestType": _label(item.request_type),
            "language": item.language,
        }
        for field in FIELDS:
            pairs[field].append((want[field], got[field]))
        wrong = [f for f in FIELDS if want[f] != got[f]]
        if wrong:
            errors.append(
                {
                    "query": item.query,
                    "sessionId": item.session_id,
                    "wrong": {f: {"expected": want[f], "got": got[f]} for f in wrong},
                    "reason": result.debug_info.classification.reason,
                }
            )
    report: dict[str, Any] = {"items": len(items), "accuracy": {}, "perClass": {}, "confusion": {}}
    for field in FIELDS:
        field_pairs = pairs[field]
        report["accuracy"][field] = round(sum(w == g for w, g in field_pairs) / max(1, len(field_pairs)), 4)
        if field == "language":
            continue
        labels = sorted({w for w, _ in field_pairs} | {g for _, g in field_pairs})
        confusion = Counter(field_pairs)
        per_class = {}
        for label in labels:
            tp = confusion[(label, label)]
            predicted = sum(1 for _, g in field_pairs if g == label)
            actual = sum(1 for w, _ in field_pairs if w == label)
            per_class[label] = {
                "precision": round(tp / predicted, 4) if predicted else None,
                "recall": round(tp / actual, 4) if actual else None,
                "support": actual,
            }
        report["perClass"][field] = per_class
        report["confusion"][field] = {
            "labels": labels,
            "matrix": [[confusion[(w, g)] for g in labels] for w in labels],  # rows: expected, columns: got
        }
    report["errors"] = errors
    return report


def dumps(report: dict[str, Any]) -> str:
    return json.dumps(report, ensure_ascii=False, indent=2)


__all__ = ["FIELDS", "LabelledQuery", "dumps", "evaluate", "read_set"]
