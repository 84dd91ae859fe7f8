"""Test model of the council (a scripted LLM shipped with the package, never a real one).

Configure it as ``MAGI_LLM_PROVIDER=python:magi.scripted:respond``.

It answers the council's prompts (Thinking, Debate, Voting, summaries, and the sdd plugin's drafting,
review and revision) with valid structured output, deterministically per sage, seed and question, so
the whole protocol runs offline, on Ray or in process. ``MAGI_SCRIPTED_LATENCY_S`` adds a fixed
delay per call (benchmarks).

Without instructions each sage leans its own way (MELCHIOR-1 mostly approves, BALTHASAR-2 is
cautious, CASPER-3 favours the user) and sometimes moves to a position both peers share. A line in
the question steers it exactly (tests, demos)::

    magi-script: melchior=APPROVE,DENY,silent balthasar=DENY casper=CONDITIONAL,fail@voting

Per sage, verdicts in order (Thinking, Debate round 1, 2, ...; the final vote takes the last one),
plus flags: ``silent`` (change stance without naming a new argument), ``fail@PHASE`` (raise),
``slow@PHASE`` (sleep ten minutes), ``invalid@PHASE`` (answer with output that never validates).
PHASE is thinking, debate, voting or summary. Alternatives separated by ``||`` script several runs
(``--runs K``, seeds ``seed..seed+K-1``): a run takes alternative ``seed % n``, so K consecutive seeds
and K alternatives give every alternative once::

    magi-script: melchior=APPROVE balthasar=APPROVE casper=DENY || melchior=DENY balthasar=DENY casper=DENY
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any

from core.errors import LLMError
from core.llm.base import LLMRequest, LLMResponse, Usage
from core.llm.fencing import fenced
from magi.context import estimate_tokens
from magi.models import SageName, Verdict

LATENCY_ENV = "MAGI_SCRIPTED_LATENCY_S"
MODEL = "magi-scripted"
ROLES = ("magi.",)  # the LLM roles it answers (core.llm.factory refuses it for others)
SLOW_S = 600.0
LEANINGS: dict[SageName, tuple[tuple[Verdict, float], ...]] = {
    SageName.MELCHIOR: ((Verdict.APPROVE, 0.5), (Verdict.CONDITIONAL, 0.3), (Verdict.DENY, 0.2)),
    SageName.BALTHASAR: ((Verdict.CONDITIONAL, 0.45), (Verdict.DENY, 0.35), (Verdict.APPROVE, 0.2)),
    SageName.CASPER: ((Verdict.APPROVE, 0.6), (Verdict.CONDITIONAL, 0.3), (Verdict.DENY, 0.1)),
}
CODES = {SageName.MELCHIOR: "mq", SageName.BALTHASAR: "bq", SageName.CASPER: "cq"}
_SESSION = re.compile(r"Deliberation (\S+?)\.")
_ROUND = re.compile(r"Debate round (\d+) of")
_PEER_VERDICT = re.compile(r"verdict: (APPROVE|DENY|CONDITIONAL)")
_DIRECTIVE = re.compile(r"magi-script:([^\n]*)")


def marker(sage: SageName | str, phase: str, round: int = 0) -> str:
    """A token the scripted answer of ``sage`` in ``phase`` carries (no sage name in it: anonymity
    scrubbing leaves it intact), so tests can see whose text reached whom (English answers only: a
    Japanese answer is meant to read clean)."""
    return f"<<{CODES[SageName(sage)]}-{phase}{round or ''}>>"


class ScriptedFailure(RuntimeError):
    """Raised on purpose for ``fail@PHASE``."""


@dataclass
class Directive:
    verdicts: list[Verdict] = field(default_factory=list)
    silent: bool = False
    fail: set[str] = field(default_factory=set)
    slow: set[str] = field(default_factory=set)
    invalid: set[str] = field(default_factory=set)


def parse_directives(text: str, seed: int = 0) -> dict[SageName, Directive]:
    """Each sage's directive; of ``A || B || ...`` alternatives, the one at ``seed`` modulo their number."""
    found: dict[SageName, Directive] = {}
    for line in _DIRECTIVE.findall(text):
        alternatives = line.split("||")
        for token in alternatives[seed % len(alternatives)].split():
            name, _, value = token.partition("=")
            try:
                sage = SageName(name.strip().lower())
            except ValueError:
                continue
            directive = found.setdefault(sage, Directive())
            for item in value.split(","):
                item = item.strip()
                if item.upper() in Verdict.__members__:
                    directive.verdicts.append(Verdict(item.upper()))
                elif item == "silent":
                    directive.silent = True
                elif "@" in item:
                    kind, _, phase = item.partition("@")
                    if kind in ("fail", "slow", "invalid"):
                        getattr(directive, kind).add(phase)
    return found


def _sage_of(request: LLMRequest) -> SageName:
    role = request.role or ""
    if role.startswith("magi.") and role[5:] in SageName.__members__.values():
        return SageName(role[5:])
    head = request.system.lstrip().upper()
    for sage in SageName:
        if head.startswith(sage.display):
            return sage
    return SageName.MELCHIOR


def _pick(rng: random.Random, weights: tuple[tuple[Verdict, float], ...]) -> Verdict:
    return rng.choices([v for v, _ in weights], [w for _, w in weights])[0]


@dataclass
class _Turn:
    sage: SageName
    seed: str
    question: str
    prompt: str
    directive: Directive | None

    def rng(self, step: str) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}|{self.sage}|{self.question}|{step}".encode()).hexdigest()
        return random.Random(digest)

    def verdict(self, step: int | None) -> tuple[Verdict, bool]:
        """(verdict at ``step`` (0 Thinking, k round k, None final), whether it moved with the peers)."""
        if self.directive is not None and self.directive.verdicts:
            seq = self.directive.verdicts
            index = len(seq) - 1 if step is None else min(step, len(seq) - 1)
            return seq[index], False
        blind = _pick(self.rng("blind"), LEANINGS[self.sage])
        if step == 0:
            return blind, False
        peers = _PEER_VERDICT.findall(self.prompt)
        agreed = len(peers) >= 2 and peers[0] == peers[1] and peers[0] != blind.value
        if agreed and self.rng(f"move{step}").random() < 0.35:
            return Verdict(peers[0]), True
        return blind, False


CONDITIONS_JA = {
    SageName.MELCHIOR: ["事前に決めた基準値と比べて効果を測定すること"],
    SageName.BALTHASAR: ["検証済みの切り戻し手順を用意すること", "先にセキュリティへの影響を確認すること"],
    SageName.CASPER: ["まず一部の利用者に限定して提供すること"],
}
LEAN_JA = {SageName.MELCHIOR: "論理", SageName.BALTHASAR: "保護", SageName.CASPER: "実利"}
VERDICT_JA = {Verdict.APPROVE: "承認", Verdict.DENY: "否決", Verdict.CONDITIONAL: "条件付き承認"}


def _japanese(turn: _Turn) -> bool:
    """Whether the prompt asks for Japanese text (the council's output-language instruction)."""
    return "in Japanese." in turn.prompt


def _vote(turn: _Turn, verdict: Verdict, changed: bool, phase: str, step: int | None) -> dict[str, Any]:
    title = turn.sage.display
    ja = _japanese(turn)
    conditions = []
    if verdict is Verdict.CONDITIONAL:
        conditions = (
            CONDITIONS_JA
            if ja
            else {
                SageName.MELCHIOR: ["measure the outcome against a stated baseline"],
                SageName.BALTHASAR: ["keep a tested rollback plan", "review the security impact first"],
                SageName.CASPER: ["ship to a small group of users first"],
            }
        )[turn.sage]
    silent = turn.directive is not None and turn.directive.silent
    arguments = [] if silent or not changed else [f"{title} weighed a point raised in {phase} {step or ''}".strip()]
    reason = f"{title}: {verdict.value.lower()} from its {LEAN_WORDS[turn.sage]} view"
    if ja:
        reason = f"{title}: {LEAN_JA[turn.sage]}の観点から{VERDICT_JA[verdict]}とする"
    return {
        "verdict": verdict.value,
        "reason": reason,
        "confidence": round(0.55 + 0.4 * turn.rng(f"confidence{step}").random(), 2),
        "conditions": conditions,
        "new_arguments": arguments,
    }


LEAN_WORDS = {SageName.MELCHIOR: "logical", SageName.BALTHASAR: "protective", SageName.CASPER: "practical"}


def _answer(turn: _Turn, name: str) -> dict[str, Any]:
    ja = _japanese(turn)
    if name == "ThinkingOutput":
        verdict, _ = turn.verdict(0)
        analysis = (
            f"{turn.sage.display} considers the request {marker(turn.sage, 'thinking')}: "
            f"its {LEAN_WORDS[turn.sage]} reading points to {verdict.value}."
        )
        points = [f"{LEAN_WORDS[turn.sage]} point {i}" for i in (1, 2)]
        if ja:
            analysis = (
                f"{turn.sage.display}は依頼を検討した: {LEAN_JA[turn.sage]}の観点からは{VERDICT_JA[verdict]}が妥当。"
            )
            points = [f"{LEAN_JA[turn.sage]}の論点{i}" for i in (1, 2)]
        return {
            "analysis": analysis,
            "key_points": points,
            "vote": _vote(turn, verdict, False, "thinking", 0),
        }
    if name == "DebateTurn":
        match = _ROUND.search(turn.prompt)
        step = int(match.group(1)) if match else 1
        verdict, _ = turn.verdict(step)
        previous, _ = turn.verdict(step - 1)
        labels = re.findall(r"^### (.+)$", turn.prompt, flags=re.MULTILINE)
        objection = f"{LEAN_JA[turn.sage]}の観点からの異論" if ja else f"{LEAN_WORDS[turn.sage]} objection"
        addition = f"{LEAN_JA[turn.sage]}の観点からの補足" if ja else "addition"
        return {
            "rebuttals": [{"peer": label, "point": objection} for label in labels[:2]],
            "additions": [addition if ja else f"{addition} {marker(turn.sage, 'round', step)}"],
            "stance": _vote(turn, verdict, verdict is not previous, "round", step),
        }
    if name == "Vote":
        verdict, _ = turn.verdict(None)
        blind, _ = turn.verdict(0)
        return _vote(turn, verdict, verdict is not blind, "voting", None)
    if name == "Summary":
        return {"summary": f"{turn.sage.display} summary of earlier turns {marker(turn.sage, 'summary')}"}
    return sdd_answer(turn.sage, name, turn.prompt)  # the sdd plugin's documents and reviews


# The sdd plugin's prompts (drafting, review, revision). Drafts fill cc-sdd's template mechanically
# (every {{PLACEHOLDER}} and [bracketed] example replaced by text naming the request), each sage files
# one finding on the document its persona cares about, and a revision appends what it addressed, so a
# test can follow every step on disk.

_TEMPLATE = re.compile(r"<<<TEMPLATE\n(.*?)\nTEMPLATE>>>", re.DOTALL)
_DRAFT = re.compile(r"<<<DRAFT\n(.*?)\nDRAFT>>>", re.DOTALL)
_DOCUMENT = re.compile(r"(?:Write|Revise) the (\w+) document")
_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")
_EXAMPLE = re.compile(r"\[([a-z][a-z /]*)\]")

SDD_FINDINGS = {
    SageName.MELCHIOR: ("requirements", "medium", "an acceptance criterion has no measurable threshold", "state one"),
    SageName.BALTHASAR: (
        "design",
        "high",
        "no error handling for a failed external call",
        "add retries and a fallback",
    ),
    SageName.CASPER: ("tasks", "low", "the first task ships nothing usable", "start with a thin end-to-end slice"),
}
SDD_VERDICTS = {SageName.MELCHIOR: "CONDITIONAL", SageName.BALTHASAR: "CONDITIONAL", SageName.CASPER: "APPROVE"}


def _sdd_head(prompt: str) -> str:
    found = fenced(prompt, "REQUEST")
    text = found[0].strip() if found and found[0].strip() else "the request"
    return text.splitlines()[0][:80]


def sdd_answer(sage: SageName, output_name: str, prompt: str) -> dict[str, Any]:
    if output_name == "SpecDocument":
        template = _TEMPLATE.search(prompt)
        found = _DOCUMENT.search(prompt)
        document = found.group(1) if found else "document"
        head = _sdd_head(prompt)
        body = template.group(1) if template else f"# {document}\n"
        body = _PLACEHOLDER.sub(lambda m: f"{m.group(1).lower().replace('_', ' ')} of {head}", body)
        body = _EXAMPLE.sub(lambda m: f"{m.group(1)} ({head})", body)
        return {"markdown": f"<!-- {document} drafted by the scripted MAGI LLM -->\n{body}"}
    if output_name == "ReviewFindings":
        document, severity, finding, suggestion = SDD_FINDINGS[sage]
        return {
            "findings": [{"document": document, "severity": severity, "finding": finding, "suggestion": suggestion}],
            "verdict": SDD_VERDICTS[sage],
            "summary": f"{sage.display} reviewed the draft",
        }
    if output_name == "RevisedDocument":
        draft = _DRAFT.search(prompt)
        numbers = [int(n) for n in re.findall(r"^(\d+)\. ", prompt, flags=re.MULTILINE)]
        notes = "\n".join(f"- finding {n} addressed" for n in numbers)
        text = (draft.group(1) if draft else "") + f"\n\n## Review notes addressed\n{notes}\n"
        return {"markdown": text, "addressed": numbers}
    raise LLMError(f"the scripted MAGI LLM has no answer for output {output_name!r} (sage {sage.display})")


PHASES = {"ThinkingOutput": "thinking", "DebateTurn": "debate", "Vote": "voting", "Summary": "summary"}


async def respond(request: LLMRequest) -> LLMResponse:
    """The provider function (async, so in-process calls overlap like remote ones)."""
    latency = float(os.environ.get(LATENCY_ENV) or 0)
    if latency > 0:
        await asyncio.sleep(latency)
    everything = "\n".join(m.text for m in request.messages)
    prompt = request.messages[-1].text if request.messages else ""
    session = _SESSION.search(everything)
    sage = _sage_of(request)
    seed = int(session.group(1)[1:]) if session and session.group(1)[1:].isdigit() else 0
    directive = parse_directives(everything, seed).get(sage)
    name = request.output_name or ""
    if not name and request.output_schema is None:  # a plain question (magi doctor --llm): a plain answer
        text = "ok (magi.scripted answers the council's structured prompts; this is its plain reply)"
        return LLMResponse(text=text, model=MODEL, usage=Usage(input_tokens=estimate_tokens(prompt), output_tokens=12))
    phase = PHASES.get(name, "other")
    if directive is not None:
        if phase in directive.fail:
            raise ScriptedFailure(f"scripted failure of {sage.display} in {phase}")
        if phase in directive.slow:
            await asyncio.sleep(SLOW_S)
        if phase in directive.invalid:
            return _response(request, {"verdict": "PERHAPS", "confidence": 7})
    question = request.messages[0].text if request.messages else ""
    turn = _Turn(sage, session.group(1) if session else "0", question, prompt, directive)
    return _response(request, _answer(turn, name))


def _response(request: LLMRequest, output: dict[str, Any]) -> LLMResponse:
    text = json.dumps(output, ensure_ascii=False)
    spent = estimate_tokens(request.system) + sum(estimate_tokens(m.text) for m in request.messages)
    return LLMResponse(
        text=text,
        output=output,
        usage=Usage(input_tokens=spent, output_tokens=estimate_tokens(text)),
        model=MODEL,
        stop_reason="end_turn",
    )


__all__ = [
    "CODES",
    "LATENCY_ENV",
    "MODEL",
    "ROLES",
    "SDD_FINDINGS",
    "SDD_VERDICTS",
    "Directive",
    "ScriptedFailure",
    "marker",
    "parse_directives",
    "respond",
    "sdd_answer",
]
