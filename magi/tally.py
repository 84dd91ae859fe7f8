"""The tally: final votes -> decision, as a pure function (no I/O, no order dependence).

- Quorum: fewer than ``quorum`` valid votes (abstentions do not count; default :data:`QUORUM`,
  ``council.quorum``) is no decision.
- ``majority``: APPROVE or DENY when at least 2 valid votes agree on it; otherwise CONDITIONAL,
  with every condition any sage stated.
- ``unanimous``: APPROVE only when every sage voted APPROVE (an abstention blocks it); any DENY is
  DENY; otherwise CONDITIONAL.
- ``weighted`` (majority only): each vote weighs its confidence; APPROVE or DENY wins when its
  weight is more than half of the total weight of the valid votes, else CONDITIONAL.

Exit codes (fail closed: anything but an approval is non-zero): APPROVE 0, DENY 1, CONDITIONAL 3,
no decision 4.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from magi.models import SAGES, Condition, SageName, Verdict, Vote
from magi.settings import Threshold

QUORUM = 2
MAJORITY = 2  # of the three sages
EXIT_CODES: dict[Verdict | None, int] = {Verdict.APPROVE: 0, Verdict.DENY: 1, Verdict.CONDITIONAL: 3, None: 4}
NO_DECISION_EXIT = 4
BAD_INPUT_EXIT = 2

Decision = Literal["APPROVE", "DENY", "CONDITIONAL", "NO_DECISION"]


def exit_code(decision: Verdict | None) -> int:
    return EXIT_CODES[decision]


def decision_name(decision: Verdict | None) -> Decision:
    return "NO_DECISION" if decision is None else decision.value


def merge_conditions(votes: Mapping[SageName, Vote | None]) -> list[Condition]:
    """Every condition once (case and spacing ignored), with the sages that stated it, in sage order."""
    merged: dict[str, Condition] = {}
    for sage in SAGES:
        vote = votes.get(sage)
        if vote is None:
            continue
        for text in vote.conditions:
            key = " ".join(text.split()).casefold()
            found = merged.get(key)
            if found is None:
                merged[key] = Condition(text=" ".join(text.split()), sages=[sage])
            elif sage not in found.sages:
                found.sages.append(sage)
    return list(merged.values())


def is_split(votes: Mapping[SageName, Vote | None], decision: Verdict | None) -> bool:
    """A CONDITIONAL outcome that no two sages voted for: the council is split, not conditionally for it
    (APPROVE / DENY / CONDITIONAL, or two votes that differ). Shown as a split, never as an approval."""
    if decision is not Verdict.CONDITIONAL:
        return False
    valid = [v.verdict for v in votes.values() if v is not None]
    return all(valid.count(verdict) < MAJORITY for verdict in Verdict)


def tally(
    votes: Mapping[SageName, Vote | None],
    threshold: Threshold = "majority",
    *,
    weighted: bool = False,
    quorum: int = QUORUM,
) -> tuple[Verdict | None, str]:
    """(decision or None for no decision, a one-line reason showing the arithmetic)."""
    valid = [v for v in votes.values() if v is not None]
    abstained = len(votes) - len(valid)
    if len(valid) < quorum:
        return None, f"no quorum: {len(valid)} valid vote(s), {quorum} needed ({abstained} abstained)"
    counts = {verdict: sum(1 for v in valid if v.verdict is verdict) for verdict in Verdict}
    shown = ", ".join(f"{k.value} {n}" for k, n in counts.items())
    if threshold == "unanimous":
        if counts[Verdict.DENY]:
            return Verdict.DENY, f"unanimous: at least one DENY ({shown})"
        if counts[Verdict.APPROVE] == len(valid) and abstained == 0:
            return Verdict.APPROVE, f"unanimous: every sage approved ({shown})"
        blocked = abstained and counts[Verdict.APPROVE] == len(valid)
        why = "an abstention blocks unanimity" if blocked else "not unanimous"
        return Verdict.CONDITIONAL, f"unanimous: {why} ({shown})"
    if weighted:
        weight = {verdict: sum(v.confidence for v in valid if v.verdict is verdict) for verdict in Verdict}
        total = sum(weight.values())
        shown_w = ", ".join(f"{k.value} {w:.2f}" for k, w in weight.items())
        for verdict in (Verdict.APPROVE, Verdict.DENY):
            if total > 0 and weight[verdict] > total / 2:
                half = f"{weight[verdict]:.2f} > {total / 2:.2f}"
                return verdict, f"weighted majority: {verdict.value} {half} ({shown_w})"
        return Verdict.CONDITIONAL, f"weighted majority: no side above half of {total:.2f} ({shown_w})"
    for verdict in (Verdict.APPROVE, Verdict.DENY):
        if counts[verdict] >= MAJORITY:
            return verdict, f"majority: {counts[verdict]} of {len(valid)} valid votes {verdict.value} ({shown})"
    return Verdict.CONDITIONAL, f"majority: no 2 valid votes agree on APPROVE or DENY ({shown})"


__all__ = [
    "BAD_INPUT_EXIT",
    "EXIT_CODES",
    "MAJORITY",
    "NO_DECISION_EXIT",
    "QUORUM",
    "Decision",
    "decision_name",
    "exit_code",
    "is_split",
    "merge_conditions",
    "tally",
]
