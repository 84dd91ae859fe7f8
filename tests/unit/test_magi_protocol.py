"""The council protocol on the in-process runtime with the shipped scripted LLM (magi/scripted.py)."""

from __future__ import annotations

from typing import Any

from core.llm.base import LLMRequest
from core.llm.testing import FunctionClient
from core.runtime import InProcessRuntime
from core.settings import Settings, load_settings
from magi.models import SAGES, Deliberation, SageName, Verdict
from magi.protocol import deliberate, peer_labels, peer_order
from magi.scripted import marker, respond

M, B, C = SageName.MELCHIOR, SageName.BALTHASAR, SageName.CASPER
SCRIPTED = "python:magi.scripted:respond"


def settings(**magi: Any) -> Settings:
    return load_settings(None, {"llm": {"provider": SCRIPTED}, "council": magi})


def recording() -> dict[SageName, FunctionClient]:
    return {s: FunctionClient(respond, model="magi-scripted") for s in SAGES}


def phase_requests(client: FunctionClient, name: str) -> list[LLMRequest]:
    return [r for r in client.requests if r.output_name == name]


async def run(
    question: str, clients: dict[SageName, FunctionClient] | None = None, seed: int = 7, **magi: Any
) -> Deliberation:
    return await deliberate(question, settings(**magi), InProcessRuntime(), seed=seed, clients=clients)


async def test_thinking_is_isolated_and_blind() -> None:
    clients = recording()
    result = await run("Rewrite the billing service?", clients, rounds=1, early_stop="off")
    for sage, client in clients.items():
        (thinking,) = phase_requests(client, "ThinkingOutput")
        assert len(thinking.messages) == 1  # only the question: no history, no peer
        text = thinking.system + thinking.messages[0].text
        for other in SAGES:
            assert marker(other, "thinking") not in text
        assert thinking.system.startswith(sage.display)
        assert thinking.role == sage.role
    assert {v.sage for v in result.votes if v.blind is not None} == set(SAGES)


async def test_debate_round_k_sees_round_k_minus_1_of_the_others() -> None:
    clients = recording()
    result = await run("Adopt a monorepo?", clients, rounds=2, early_stop="off")
    assert result.rounds_run == 2
    for sage, client in clients.items():
        first, second = (r.messages[-1].text for r in phase_requests(client, "DebateTurn"))
        peers = [p for p in SAGES if p is not sage]
        for peer in peers:
            assert marker(peer, "thinking") in first and marker(peer, "round", 1) not in first
            assert marker(peer, "round", 1) in second and marker(peer, "thinking") not in second
        assert marker(sage, "thinking") not in first and marker(sage, "round", 1) not in second
        # its own earlier turns are in its history, not presented as a peer's position
        assert any(marker(sage, "round", 1) in m.text for m in phase_requests(client, "DebateTurn")[1].messages[:-1])


async def test_peers_are_anonymous_in_a_seeded_order_per_sage() -> None:
    clients = recording()
    await run("Open the office on Saturdays?", clients, rounds=1, early_stop="off", seed=11)
    for sage, client in clients.items():
        (debate,) = phase_requests(client, "DebateTurn")
        prompt = debate.messages[-1].text
        for name in ("MELCHIOR", "BALTHASAR", "CASPER"):
            assert name not in prompt.upper()  # names in the peers' texts are replaced by labels
        first, second = peer_order(sage, 11)
        assert prompt.index("### Sage A") < prompt.index(marker(first, "thinking")) < prompt.index("### Sage B")
        assert prompt.index("### Sage B") < prompt.index(marker(second, "thinking"))
    orders = {tuple(peer_order(M, seed)) for seed in range(20)}
    assert len(orders) == 2  # the seed decides the order, both occur
    assert peer_order(M, 3) == peer_order(M, 3)
    assert list(peer_order(M, 3, shuffle=False)) == [B, C]
    assert peer_labels(M, 3, anonymous=False) == {p: p.display for p in peer_order(M, 3)}


async def test_anonymity_off_shows_names() -> None:
    clients = recording()
    await run(
        "Open the office on Saturdays?", clients, rounds=1, early_stop="off", anonymous=False, shuffle_peers=False
    )
    (debate,) = phase_requests(clients[M], "DebateTurn")
    prompt = debate.messages[-1].text
    assert prompt.index("### BALTHASAR-2") < prompt.index("### CASPER-3")


async def test_early_stop_on_unanimous_blind_votes_and_on_a_stable_round() -> None:
    clients = recording()
    unanimous = "Ship it?\nmagi-script: melchior=APPROVE balthasar=APPROVE casper=APPROVE"
    result = await run(unanimous, clients, rounds=3)
    assert result.rounds_run == 0 and result.stopped_early == "the blind votes were unanimous"
    assert result.llm_calls_saved == 9
    assert all(not phase_requests(c, "DebateTurn") for c in clients.values())
    assert result.decision == "APPROVE" and result.exit_code == 0

    stable = "Ship it?\nmagi-script: melchior=APPROVE balthasar=DENY casper=CONDITIONAL"
    result = await run(stable, rounds=3)
    assert result.rounds_run == 1 and result.stopped_early == "no sage changed its stance in round 1"
    assert result.llm_calls_saved == 6
    result = await run(stable, rounds=3, early_stop="off")
    assert result.rounds_run == 3 and result.stopped_early is None and result.llm_calls_saved == 0
    result = await run(unanimous, rounds=0)
    assert result.rounds_run == 0 and result.llm_calls_saved == 0 and result.decision == "APPROVE"


async def test_conformity_flags_a_flip_without_a_new_argument() -> None:
    question = "Cut the QA budget?\nmagi-script: melchior=APPROVE,DENY balthasar=DENY casper=CONDITIONAL,DENY,silent"
    result = await run(question, rounds=1)
    by = {c.sage: c for c in result.conformity}
    assert by[M].changed and by[M].new_argument and not by[M].flagged
    assert by[C].changed and not by[C].new_argument and by[C].flagged
    assert not by[B].changed and not by[B].flagged
    assert result.decision == "DENY" and result.exit_code == 1
    debate = result.debate[0]
    assert set(debate.changed) == {M, C}


async def test_a_failing_a_slow_and_an_invalid_sage_are_recorded_and_the_others_go_on() -> None:
    question = (
        "Rename the product?\n"
        "magi-script: melchior=APPROVE,fail@thinking balthasar=APPROVE,slow@debate casper=DENY,invalid@voting"
    )
    result = await run(question, rounds=1, timeout_s=2, early_stop="off")
    failures = {(f.sage, f.phase): f for f in result.failures}
    assert failures[(M, "thinking")].kind == "exception" and "scripted failure" in failures[(M, "thinking")].message
    assert failures[(B, "debate")].kind == "timeout" and failures[(B, "debate")].round == 1
    assert failures[(C, "voting")].kind == "invalid_output"
    votes = {v.sage: v for v in result.votes}
    assert votes[M].blind is None and votes[M].final is not None  # failed Thinking, voted later
    assert votes[C].abstained and votes[C].final is None and votes[C].abstain_reason
    usage = {(u.sage, u.phase): u for u in result.usage}
    assert usage[(C, "voting")].calls == 2  # the invalid vote got exactly one repair
    assert result.decision == "APPROVE"  # two valid APPROVE votes
    assert {e.sage for e in result.debate[0].entries} == {M, C}


async def test_quorum_lost_is_no_decision() -> None:
    question = "Go?\nmagi-script: melchior=APPROVE,invalid@voting balthasar=DENY,fail@voting casper=APPROVE"
    result = await run(question, rounds=0)
    assert result.decision == "NO_DECISION" and result.exit_code == 4
    assert "no quorum" in result.decision_reason


async def test_a_quorum_of_three_makes_one_abstention_no_decision() -> None:
    question = "Go?\nmagi-script: melchior=APPROVE balthasar=APPROVE casper=DENY,invalid@voting"
    default = await run(question)
    assert default.decision == "APPROVE" and default.exit_code == 0  # two valid votes are the default quorum
    strict = await run(question, quorum=3)
    assert strict.decision == "NO_DECISION" and strict.exit_code == 4
    assert strict.decision_reason.startswith("no quorum: 2 valid vote(s), 3 needed")


async def test_conditional_lists_every_condition_and_keeps_dissent() -> None:
    question = "Go?\nmagi-script: melchior=APPROVE balthasar=CONDITIONAL casper=DENY"
    result = await run(question, rounds=1)
    assert result.decision == "CONDITIONAL" and result.exit_code == 3
    assert [c.sages for c in result.conditions] == [[B], [B]]
    assert {d.sage for d in result.dissent} == {M, C}
    assert {d.verdict for d in result.dissent} == {Verdict.APPROVE, Verdict.DENY}


async def test_context_is_summarised_near_a_small_budget() -> None:
    clients = recording()
    result = await run("Move to the cloud?", clients, rounds=3, early_stop="off", context_budget_tokens=200)
    assert result.context, "a 200-token budget must trigger summaries"
    assert {c.method for c in result.context} == {"llm"}
    assert any(r.output_name == "Summary" for r in clients[M].requests)
    assert any("Summary of your earlier turns" in m["content"] for m in result.transcripts["melchior"])
    # the summariser failing falls back to a deterministic truncation, which says what it cut
    question = "Move to the cloud?\nmagi-script: melchior=fail@summary"
    result = await run(question, rounds=3, early_stop="off", context_budget_tokens=200)
    first = next(c for c in result.context if c.sage is M)
    assert first.method == "truncation"
    assert result.decision in ("APPROVE", "DENY", "CONDITIONAL")


async def test_usage_per_sage_and_phase_and_timings() -> None:
    result = await run("Go?\nmagi-script: melchior=APPROVE balthasar=DENY casper=CONDITIONAL", rounds=1)
    phases = {(u.sage, u.phase) for u in result.usage}
    assert phases == {(s, p) for s in SAGES for p in ("thinking", "debate", "voting")}
    assert result.usage_total.calls == 9 and result.usage_total.input_tokens > 0
    assert result.timings.total_ms >= result.timings.thinking_ms


async def test_context_manager_truncation_fallback_says_what_it_cut() -> None:
    from magi.context import ContextManager

    async def broken(_turns: str) -> str:
        raise RuntimeError("summariser down")

    context = ContextManager(budget_tokens=200)
    for i in range(3):
        context.record(f"question {i} " + "x" * 400, f"answer {i} " + "y" * 400)
    compaction = await context.prepare("system", "next", broken)
    assert compaction is not None and compaction.method == "truncation" and compaction.turns == 4
    assert len(context.messages) == 4  # summary exchange + the latest exchange, kept whole
    assert "characters left out by the context manager" in context.messages[0].text
    assert context.messages[-1].text == "answer 2 " + "y" * 400
    assert await ContextManager(budget_tokens=10_000).prepare("s", "p", broken) is None


async def test_a_long_position_reaches_the_peers_summarised_never_cut_silently() -> None:
    async def verbose(request: LLMRequest) -> Any:
        response = await respond(request)
        if request.output_name == "ThinkingOutput" and response.output is not None:
            response.output["analysis"] += " detail" * 400  # ~700 tokens: over a quarter of 2000
        return response

    clients = recording()
    clients[M] = FunctionClient(verbose, model="magi-scripted")
    question = "Go?\nmagi-script: melchior=APPROVE balthasar=DENY casper=CONDITIONAL"
    result = await run(question, clients, rounds=1, context_budget_tokens=2000)
    (event,) = [c for c in result.context if c.kind == "peer_position"]
    assert (event.sage, event.method, event.phase) == (M, "llm", "debate")
    (debate,) = phase_requests(clients[B], "DebateTurn")
    prompt = debate.messages[-1].text
    assert marker(M, "summary") in prompt and "summarised by the context manager" in prompt
    assert "detail detail" not in prompt and "verdict: APPROVE" in prompt  # the stance is always in full
    entry = next(e for e in result.debate[0].entries if e.sage is B)
    assert [p.summarised for p in entry.peers if p.sage is M] == [True]
    assert result.thinking[0].output.analysis.count("detail") == 400  # the record keeps the full text
