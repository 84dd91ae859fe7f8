"""Scripted answers for the sdd plugin's prompts (drafting, review, revision); see magi/scripted.py.

Drafts fill cc-sdd's template mechanically (every ``{{PLACEHOLDER}}`` and ``[bracketed]`` example
replaced by text naming the request), each sage files one finding on the document its persona cares
about, and a revision appends what it addressed, so a test can follow every step on disk.
"""

from __future__ import annotations

import re
from typing import Any

from core.errors import LLMError
from magi.models import SageName

_TEMPLATE = re.compile(r"<<<TEMPLATE\n(.*?)\nTEMPLATE>>>", re.DOTALL)
_DRAFT = re.compile(r"<<<DRAFT\n(.*?)\nDRAFT>>>", re.DOTALL)
_REQUEST = re.compile(r"Request:\n(.*?)\n\n", re.DOTALL)
_DOCUMENT = re.compile(r"(?:Write|Revise) the (\w+) document")
_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")
_EXAMPLE = re.compile(r"\[([a-z][a-z /]*)\]")

FINDINGS = {
    SageName.MELCHIOR: ("requirements", "medium", "an acceptance criterion has no measurable threshold", "state one"),
    SageName.BALTHASAR: (
        "design",
        "high",
        "no error handling for a failed external call",
        "add retries and a fallback",
    ),
    SageName.CASPER: ("tasks", "low", "the first task ships nothing usable", "start with a thin end-to-end slice"),
}
VERDICTS = {SageName.MELCHIOR: "CONDITIONAL", SageName.BALTHASAR: "CONDITIONAL", SageName.CASPER: "APPROVE"}


def _head(prompt: str) -> str:
    match = _REQUEST.search(prompt)
    text = match.group(1).strip() if match else "the request"
    return text.splitlines()[0][:80]


def sdd_answer(sage: SageName, output_name: str, prompt: str) -> dict[str, Any]:
    if output_name == "SpecDocument":
        template = _TEMPLATE.search(prompt)
        found = _DOCUMENT.search(prompt)
        document = found.group(1) if found else "document"
        head = _head(prompt)
        body = template.group(1) if template else f"# {document}\n"
        body = _PLACEHOLDER.sub(lambda m: f"{m.group(1).lower().replace('_', ' ')} of {head}", body)
        body = _EXAMPLE.sub(lambda m: f"{m.group(1)} ({head})", body)
        return {"markdown": f"<!-- {document} drafted by the scripted MAGI LLM -->\n{body}"}
    if output_name == "ReviewFindings":
        document, severity, finding, suggestion = FINDINGS[sage]
        return {
            "findings": [{"document": document, "severity": severity, "finding": finding, "suggestion": suggestion}],
            "verdict": VERDICTS[sage],
            "summary": f"{sage.display} reviewed the draft",
        }
    if output_name == "RevisedDocument":
        draft = _DRAFT.search(prompt)
        numbers = [int(n) for n in re.findall(r"^(\d+)\. ", prompt, flags=re.MULTILINE)]
        notes = "\n".join(f"- finding {n} addressed" for n in numbers)
        text = (draft.group(1) if draft else "") + f"\n\n## Review notes addressed\n{notes}\n"
        return {"markdown": text, "addressed": numbers}
    raise LLMError(f"the scripted MAGI LLM has no answer for output {output_name!r} (sage {sage.display})")


__all__ = ["FINDINGS", "VERDICTS", "sdd_answer"]
