"""One critic run: every idea judged alone by its own CriticWorker, scored, stored, the best selected.

* At most ``critic.max_workers`` ideas are judged at once, each on a worker actor of its own
  (:class:`WorkerPool`: resident workers, shared by every run and replica).
* ``critic.timeout_s`` bounds the whole run: ideas finished by then are kept, the others are
  ``timeout``; a failed idea is kept with its error; neither is ever selected. When no idea
  succeeds the run raises :class:`CriticError` naming every idea's error.
* With ``critic.cache`` an idea evaluated before under the same key (critic/cache.py) is taken
  from the store without an LLM call.
* Every evaluation is stored (``critic_evaluations``) and each stage's reasoning is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import ValidationError

from core.errors import ConfigError, first_line
from core.events import EventSink, ListSink
from core.llm.cost import UsageMeter
from core.llm.factory import require_llm
from core.llm.roles import resolve_role
from core.messages import language_of
from core.residents import ResidentKind, register_resident
from core.retry import backoff_delay
from core.runtime import Handle, Runtime, code_fingerprint
from core.settings import LLMSettings, Settings
from core.store import Store
from critic import repository
from critic.cache import cache_key
from critic.errors import CriticError
from critic.events import EvaluationCompleted, EvaluationStarted, IdeaJudged, IdeaJudging, IdeaStatus
from critic.metrics import CACHE_HITS, EVALUATIONS, OVER_BUDGET
from critic.models import (
    BusinessIdea,
    CriticInput,
    CriticOutput,
    CriticUsage,
    IdeaEvaluation,
    JudgeRequest,
    JudgeResult,
    ProfileRef,
    SampleScore,
    SelectedIdea,
    Weights,
)
from critic.profile import Profile, load_profile
from critic.prompt import LANGUAGE_WORDS, messages_for, system_prompt
from critic.scoring import ScoredSample, aggregate, rank, score_judgement, too_close_to_call
from critic.settings import CriticSettings
from critic.worker import ROLE, CriticWorker

log = logging.getLogger(__name__)
# How long a slot keeps looking for a live worker after its own died. Once a node is lost, its actors'
# names stay bound until the cluster declares the node dead (Ray's health checks: seconds), and the first
# replacement may find the dead worker again under its name.
WORKER_REPLACEMENT_S = 60.0
TEMPERATURE_RANGE = (0.3, 0.5)


def configured_weights(section: CriticSettings) -> Weights:
    try:
        return Weights(market=section.market_weight, synergy=section.synergy_weight)
    except ValidationError as exc:
        raise ConfigError(
            f"critic.market_weight {section.market_weight:g} and critic.synergy_weight {section.synergy_weight:g} "
            "must add up to 100 (e.g. --weights 60:40)"
        ) from exc


def judge_temperature(llm: LLMSettings, section: CriticSettings) -> float:
    """critic.temperature, unless ``llm.params`` sets one for the role; either must lie in 0.3-0.5."""
    role_value = resolve_role(llm, ROLE).temperature
    if role_value is None:
        return section.temperature
    low, high = TEMPERATURE_RANGE
    if not low <= role_value <= high:
        params = llm.params
        key = ROLE if params.get(ROLE) and params[ROLE].temperature is not None else "default"
        raise ConfigError(
            f"llm.params[{key!r}].temperature is {role_value:g} and would apply to the critic, which needs "
            f"{low:g}-{high:g} for consistent scores: set llm.params[{ROLE!r}].temperature within that range "
            "(or remove it; critic.temperature, default 0.4, is used then)"
        )
    return role_value


def model_label(llm: LLMSettings) -> str:
    """Provider and model of the judge as configured, as they enter cache keys."""
    return resolve_role(llm, ROLE).label


def answered_label(llm: LLMSettings, models: set[str]) -> str:
    """Provider and the model(s) that answered, as the output shows them (``python:critic.scripted:judge/
    critic-scripted``, not the configured name a scripted judge never was)."""
    endpoint = resolve_role(llm, ROLE).endpoint
    return f"{endpoint.provider if endpoint else 'none'}/{'+'.join(sorted(models))}"


def preflight(settings: Settings) -> tuple[Weights, float, Profile]:
    """Everything that can be wrong before any work: weights, temperature, the LLM, the profile."""
    section = CriticSettings.of(settings)
    weights = configured_weights(section)
    temperature = judge_temperature(settings.llm, section)
    require_llm(settings.llm, "magi critic", ROLE)  # no LLM: a clear error before any work
    return weights, temperature, load_profile(section.industry)


def _log_stages(evaluation: IdeaEvaluation, run_id: str) -> None:
    b = evaluation.breakdown
    if b is None:
        return
    stages = {
        "market": b.market.model_dump(by_alias=True),
        "stage1_capabilities": {
            "required": b.synergy.required_capabilities,
            "points": {c.capability: c.points for c in b.synergy.capabilities},
            "reasoning": b.synergy.reasoning,
        },
        "stage2_scenario": b.synergy.scenario.model_dump(by_alias=True),
        "stage3_verification": b.synergy.verification.model_dump(by_alias=True),
        "multiplier": b.synergy.multiplier,
        "arithmetic": b.arithmetic,
    }
    for stage, detail in stages.items():
        log.info(
            "critic %s",
            json.dumps(
                {"run": run_id, "idea": evaluation.idea_id, "stage": stage, "detail": detail}, ensure_ascii=False
            ),
        )


def evaluation_from(
    idea: BusinessIdea, result: JudgeResult, profile: Profile, weights: Weights, budget: int
) -> IdeaEvaluation:
    """Score every successful sample and aggregate them; no successful sample -> ``failed``."""
    scored: list[ScoredSample] = []
    warnings: list[str] = []
    errors: list[str] = []
    for sample in result.samples:
        if sample.judgement is None:
            errors.append(f"sample {sample.sample}: {sample.error}")
            continue
        scored.append(score_judgement(sample.judgement, idea, profile.base, weights, sample.tokens))
        if sample.tokens > budget:
            warnings.append(f"sample {sample.sample} used {sample.tokens} tokens, over the budget of {budget}")
    tokens = max((s.tokens for s in result.samples), default=0)
    if not scored:
        return IdeaEvaluation(
            idea_id=idea.id,
            title=idea.title,
            status="failed",
            error="; ".join(errors) or "no judgement returned",
            tokens=tokens,
            duration_ms=result.duration_ms,
        )
    warnings = [w for s in scored for w in s.warnings] + warnings
    warnings += [f"{e} (left out of the median)" for e in errors]
    total = aggregate(scored)
    return IdeaEvaluation(
        idea_id=idea.id,
        title=idea.title,
        status="ok",
        market_score=total.market,
        synergy_score=total.synergy,
        total_score=total.total,
        spread=total.spread,
        breakdown=total.representative.breakdown,
        reasons=total.representative.reasons,
        warnings=list(dict.fromkeys(warnings)),
        samples=[
            SampleScore(market_score=s.market, synergy_score=s.synergy, total_score=s.total, tokens=s.tokens)
            for s in scored
        ],
        tokens=tokens,
        duration_ms=result.duration_ms,
    )


def worker_code() -> str:
    """The fingerprint of the code a critic worker runs: a new one gets new workers (core/residents.py)."""
    return code_fingerprint("core", "critic", "data/critic")


# Workers of an older code are retired once they judge nothing.
register_resident(ResidentKind(f"{CriticWorker.__name__}:", worker_code, CriticWorker.in_flight.__name__))


class WorkerPool:
    """At most ``size`` ideas judged at once, each on one of ``size`` resident CriticWorker agents.

    The workers are created once per cluster (Ray: detached actors named ``CriticWorker:<n>-<code
    version>`` in the project's namespace) and shared by every run, pool and replica, so no request starts a process
    once they exist (~2 s for 5 on 2 cores when they do). A worker that fails under a call (a dead
    actor, a lost node) is replaced and the idea judged again on the new one, for up to
    ``WORKER_REPLACEMENT_S`` while the replacement is still found dead. A call cut by the run's timeout
    is cancelled in its worker.
    """

    def __init__(self, runtime: Runtime, llm: LLMSettings, size: int) -> None:
        self.runtime = runtime
        self.llm = llm
        self.handles: dict[int, Handle[CriticWorker]] = {}
        self._slots: asyncio.Queue[int] = asyncio.Queue()
        for slot in range(size):
            self._slots.put_nowait(slot)

    async def judge(self, request: JudgeRequest, started: Callable[[], None] | None = None) -> JudgeResult:
        """``started`` hears when a worker takes the request (it waits while every worker is busy)."""
        slot = await self._slots.get()
        if started is not None:
            started()
        try:
            replacing_until: float | None = None
            for retry in itertools.count():
                handle = self.handles.get(slot)
                if handle is None:
                    # zero CPUs: a worker waits on the LLM; its own process (Ray) keeps ideas apart
                    key = f"{slot}-{worker_code()}"  # a new version: new workers
                    handle = await self.runtime.get_or_create(CriticWorker, key=key, detached=True)
                    self.handles[slot] = handle
                call = handle.call(CriticWorker.judge, request, self.llm)
                try:
                    return await call
                except asyncio.CancelledError:
                    call.cancel()  # the run's timeout: stop the work in the worker too
                    raise
                except Exception as exc:
                    # judge() reports LLM failures in its result, so this is the worker itself (a
                    # dead actor, a lost node): replace it and judge the idea on the new one; while
                    # the cluster still names the dead worker, keep trying for a while
                    self.handles.pop(slot, None)
                    with contextlib.suppress(Exception):
                        self.runtime.kill(handle)
                    now = time.monotonic()
                    replacing_until = replacing_until or now + WORKER_REPLACEMENT_S
                    if retry > 0 and (not self.runtime.lost(exc) or now >= replacing_until):
                        raise
                    log.warning("critic: worker %d failed (%s); starting a new one", slot, first_line(exc))
                    if retry > 0:
                        await asyncio.sleep(backoff_delay(retry - 1, 0.5, 5.0))
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            self._slots.put_nowait(slot)

    def close(self) -> None:
        """Let go of the workers (they stay for the next pool: they belong to the cluster)."""
        self.handles.clear()


class _Progress:
    """Counts finished ideas and tells ``sink`` of each, in the order they finish."""

    def __init__(self, sink: EventSink, run_id: str, total: int) -> None:
        self.sink = sink
        self.run_id = run_id
        self.total = total
        self.done = 0

    def judging(self, idea_id: str) -> None:
        self.sink.emit(IdeaJudging(idea_id=idea_id, run_id=self.run_id))

    def judged(self, idea_id: str, status: IdeaStatus) -> None:
        self.done += 1
        EVALUATIONS.inc(status=status)
        if status == "cached":
            CACHE_HITS.inc()
        percent = round(100 * self.done / max(1, self.total), 1)
        self.sink.emit(
            IdeaJudged(
                idea_id=idea_id, status=status, done=self.done, total=self.total, progress=percent, run_id=self.run_id
            )
        )


async def evaluate_ideas(
    ideas: CriticInput,
    settings: Settings,
    runtime: Runtime,
    *,
    store: Store | None = None,
    run_id: str | None = None,
    pool: WorkerPool | None = None,
    events: EventSink | None = None,
) -> CriticOutput:
    """Evaluate ``ideas`` and select the best; raises CriticError when none can be evaluated.

    ``pool`` keeps worker actors between runs (see :class:`WorkerPool`); its settings' LLM section
    must be that of ``settings``. ``events`` hears how far the run is (critic/events.py).
    """
    started = time.monotonic()
    section = CriticSettings.of(settings)
    weights, temperature, profile = preflight(settings)
    model = model_label(settings.llm)
    run_id = run_id or uuid.uuid4().hex[:12]
    language = language_of(" ".join(f"{i.title} {i.description}" for i in ideas.ideas))
    system = system_prompt(profile, LANGUAGE_WORDS[language])
    keys = {
        idea.id: cache_key(
            idea,
            profile=profile.key,
            weights=weights,
            model=model,
            samples=section.samples,
            temperature=temperature,
        )
        for idea in ideas.ideas
    }

    evaluations: dict[str, IdeaEvaluation] = {}
    if section.cache and store is not None:
        for idea in ideas.ideas:
            hit = repository.cached_evaluation(store, keys[idea.id])
            if hit is not None:
                evaluations[idea.id] = hit.model_copy(update={"idea_id": idea.id, "title": idea.title, "cached": True})
                log.info("critic: idea %s taken from the cache (no LLM call)", idea.id)

    progress = _Progress(events or ListSink(), run_id, len(ideas.ideas))
    progress.sink.emit(EvaluationStarted(ideas=len(ideas.ideas), cached=len(evaluations), run_id=run_id, progress=0))
    for idea_id in evaluations:
        progress.judged(idea_id, "cached")
    own_pool = pool is None
    workers = pool or WorkerPool(runtime, settings.llm, section.max_workers)
    tasks: dict[str, asyncio.Task[JudgeResult]] = {}
    for idea in ideas.ideas:
        if idea.id in evaluations:
            continue
        request = JudgeRequest(
            idea_id=idea.id,
            system=system,
            messages=[messages_for(idea, k) for k in range(1, section.samples + 1)],
            temperature=temperature,
            max_tokens=section.max_tokens,
        )
        tasks[idea.id] = asyncio.ensure_future(workers.judge(request, functools.partial(progress.judging, idea.id)))

    meter = UsageMeter()
    answered: set[str] = set()  # the models that did answer (a scripted judge is not the configured name)
    by_id = {idea.id: idea for idea in ideas.ideas}

    def settle(idea_id: str, task: asyncio.Task[JudgeResult]) -> None:
        """The idea's evaluation once its task ended (a cancelled task: the run's timeout), reported at once."""
        if idea_id in evaluations:
            return
        idea = by_id[idea_id]
        if task.cancelled():
            evaluation = IdeaEvaluation(
                idea_id=idea_id,
                title=idea.title,
                status="timeout",
                error=f"not evaluated within the run's timeout of {section.timeout_s:g} s (--timeout)",
            )
        elif (error := task.exception()) is not None:
            log.warning("critic: idea %s failed: %s", idea_id, first_line(error))
            evaluation = IdeaEvaluation(
                idea_id=idea_id, title=idea.title, status="failed", error=f"{type(error).__name__}: {first_line(error)}"
            )
        else:
            result = task.result()
            for call in result.calls:
                meter.add(call.usage, call.model)
                if call.model:
                    answered.add(call.model)
            evaluation = evaluation_from(idea, result, profile, weights, section.token_budget)
        evaluations[idea_id] = evaluation
        progress.judged(idea_id, evaluation.status)

    for idea_id, task in tasks.items():
        task.add_done_callback(functools.partial(settle, idea_id))
    if tasks:
        await asyncio.wait(tasks.values(), timeout=max(0.0, section.timeout_s - (time.monotonic() - started)))
    pending = [t for t in tasks.values() if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)  # the cancelled ones give their slots back
    for idea_id, task in tasks.items():  # callbacks run soon after a task ends; make sure each one did
        settle(idea_id, task)
    if own_pool:
        workers.close()

    ordered = [evaluations[idea.id] for idea in ideas.ideas]
    for evaluation in ordered:
        _log_stages(evaluation, run_id)
        if store is not None:
            repository.save_evaluation(
                store,
                evaluation,
                run_id=run_id,
                cache_key=keys[evaluation.idea_id],
                market_weight=weights.market,
                synergy_weight=weights.synergy,
                model=model,
                profile=profile.key,
                samples=section.samples,
            )
    ranked = rank(ordered)
    selected = ranked[0].idea_id if ranked and (ranked[0].total_score or 0.0) >= section.min_total else None
    progress.sink.emit(EvaluationCompleted(selected_idea_id=selected, run_id=run_id, progress=100))
    if not ranked:
        raise CriticError.all_failed({e.idea_id: e.error or e.status for e in ordered})
    best = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    close = too_close_to_call(best, runner_up)
    reason = f"{best.title} has the highest total ({best.total_score:g} of 100)"
    chosen: SelectedIdea | None = SelectedIdea(id=best.idea_id, title=best.title)
    if (best.total_score or 0.0) < section.min_total:
        chosen, close = None, False
        reason = (
            f"no idea selected: the best, {best.title}, totals {best.total_score:g} of 100, below the minimum "
            f"of {section.min_total:g} (critic.min_total)"
        )
    elif runner_up is not None:
        reason += f", ahead of {runner_up.title} ({runner_up.total_score:g})"
        if close:
            reason += (
                f"; too close to call: the gap is within the samples' combined spread "
                f"({best.spread or 0:g} + {runner_up.spread or 0:g}); "
                "treat both as candidates or rerun with more --samples"
            )
        elif best.total_score == runner_up.total_score:
            reason += "; tie broken by synergy, then market, then spread, then id"
    over = [e.idea_id for e in ordered if e.tokens > section.token_budget]
    OVER_BUDGET.inc(len(over))
    return CriticOutput(
        selected_idea=chosen,
        evaluations=ordered,
        too_close_to_call=close,
        selection_reason=reason,
        min_total=section.min_total,
        weights=weights,
        samples=section.samples,
        profile=ProfileRef(name=profile.key, version=profile.base.version),
        model=answered_label(settings.llm, answered) if answered else model,
        usage=CriticUsage(
            llm=meter.summary(),
            token_budget=section.token_budget,
            max_tokens_per_evaluation=max((e.tokens for e in ordered), default=0),
            over_budget=over,
        ),
        timestamp=datetime.now(UTC).isoformat(),
        run_id=run_id,
    )


__all__ = [
    "TEMPERATURE_RANGE",
    "WorkerPool",
    "answered_label",
    "configured_weights",
    "evaluate_ideas",
    "evaluation_from",
    "judge_temperature",
    "model_label",
    "preflight",
    "worker_code",
]
