"""The tally over every combination of three votes, both thresholds, abstentions and sage order."""

from __future__ import annotations

import itertools

import pytest

from magi.models import SAGES, SageName, Verdict, Vote
from magi.tally import exit_code, merge_conditions, tally

V = list(Verdict)


def vote(verdict: Verdict, confidence: float = 0.8, conditions: tuple[str, ...] = ()) -> Vote:
    return Vote(verdict=verdict, reason="r", confidence=confidence, conditions=list(conditions))


def expected(verdicts: tuple[Verdict | None, ...], threshold: str) -> Verdict | None:
    """The rules as the issue states them, written independently of magi/tally.py."""
    valid = [v for v in verdicts if v is not None]
    if len(valid) < 2:
        return None
    if threshold == "majority":
        for side in (Verdict.APPROVE, Verdict.DENY):
            if valid.count(side) >= 2:
                return side
        return Verdict.CONDITIONAL
    if Verdict.DENY in valid:
        return Verdict.DENY
    if len(valid) == 3 and all(v is Verdict.APPROVE for v in valid):
        return Verdict.APPROVE
    return Verdict.CONDITIONAL


@pytest.mark.parametrize("threshold", ["majority", "unanimous"])
def test_all_27_combinations_and_every_order_of_sages(threshold: str) -> None:
    seen = set()
    for combo in itertools.product(V, repeat=3):
        want = expected(combo, threshold)
        for order in itertools.permutations(SAGES):
            votes = {sage: vote(v) for sage, v in zip(order, combo, strict=True)}
            decision, reason = tally(votes, threshold)  # type: ignore[arg-type]
            assert decision is want, (combo, order, reason)
        seen.add(combo)
    assert len(seen) == 27


@pytest.mark.parametrize("threshold", ["majority", "unanimous"])
def test_abstentions_and_quorum(threshold: str) -> None:
    for combo in itertools.product([*V, None], repeat=3):
        votes = {sage: (vote(v) if v is not None else None) for sage, v in zip(SAGES, combo, strict=True)}
        decision, reason = tally(votes, threshold)  # type: ignore[arg-type]
        assert decision is expected(combo, threshold), (combo, reason)
        if sum(v is not None for v in combo) < 2:
            assert decision is None and "no quorum" in reason and exit_code(decision) == 4


def test_known_cases_and_exit_codes() -> None:
    a, d, c = Verdict.APPROVE, Verdict.DENY, Verdict.CONDITIONAL
    cases = {
        (a, a, d): (a, d),
        (a, d, c): (c, d),
        (c, c, c): (c, c),
        (a, a, a): (a, a),
        (d, d, a): (d, d),
    }
    for combo, (majority, unanimous) in cases.items():
        votes = dict(zip(SAGES, (vote(v) for v in combo), strict=True))
        assert tally(votes, "majority")[0] is majority
        assert tally(votes, "unanimous")[0] is unanimous
    assert [exit_code(x) for x in (a, d, c, None)] == [0, 1, 3, 4]
    # unanimous: an abstention blocks an approval (fail closed)
    assert tally({SageName.MELCHIOR: vote(a), SageName.BALTHASAR: vote(a), SageName.CASPER: None}, "unanimous")[0] is c


def test_weighted_tally_uses_confidence() -> None:
    votes = {
        SageName.MELCHIOR: vote(Verdict.APPROVE, 0.9),
        SageName.BALTHASAR: vote(Verdict.DENY, 0.2),
        SageName.CASPER: vote(Verdict.CONDITIONAL, 0.3),
    }
    decision, reason = tally(votes, "majority", weighted=True)
    assert decision is Verdict.APPROVE and "0.90 > 0.70" in reason
    assert tally(votes, "majority")[0] is Verdict.CONDITIONAL  # unweighted: no two agree
    even = {s: vote(v, 0.5) for s, v in zip(SAGES, (Verdict.APPROVE, Verdict.DENY, Verdict.CONDITIONAL), strict=True)}
    assert tally(even, "majority", weighted=True)[0] is Verdict.CONDITIONAL


def test_conditions_are_merged_deduplicated_and_attributed() -> None:
    votes = {
        SageName.MELCHIOR: vote(Verdict.CONDITIONAL, conditions=("Add a rollback plan", "measure first")),
        SageName.BALTHASAR: vote(Verdict.CONDITIONAL, conditions=("add a  rollback plan",)),
        SageName.CASPER: None,
    }
    merged = merge_conditions(votes)
    assert [(c.text, c.sages) for c in merged] == [
        ("Add a rollback plan", [SageName.MELCHIOR, SageName.BALTHASAR]),
        ("measure first", [SageName.MELCHIOR]),
    ]
