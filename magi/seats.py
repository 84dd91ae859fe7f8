"""The three resident sages as one deliberation sees them: which actor serves it, and its conversations.

Each sage is a long-lived agent created once per cluster (Ray: a detached, named actor in the
project's namespace; its name carries a fingerprint of the code it runs, so an upgrade gets new
ones), ``council.sage_replicas`` of them per sage on a cluster; a deliberation is served by one of
each, picked from its id, and holds one conversation on it from ``open`` to ``close`` (also after a
failure or a timeout: ``close`` runs in the caller's ``finally``).

A sage whose actor died is found again (created anew) by :meth:`Seats.reseat`: the call that met the
dead actor is recorded as that phase's failure by the caller, and the next phase goes to the new actor
with a fresh conversation. Nothing here starts a process per deliberation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from core.errors import first_line
from core.llm import LLMClient
from core.residents import ResidentKind, register_resident
from core.runtime import DEFAULT_NAMESPACE, Call, Handle, Runtime, code_fingerprint
from core.settings import LLMSettings
from magi.models import SAGES, SageName
from magi.sage import Sage, UnknownDeliberation
from magi.settings import CouncilSettings

log = logging.getLogger(__name__)
STARTUP_TIMEOUT_S = 120.0  # how long the sages' actors may take to start (only the first use per cluster)
EXPIRY_CALLS = 3  # a conversation unused for this many call timeouts (+ a minute) lost its caller


def sage_code() -> str:
    """The fingerprint of the code a sage runs: a new one gets new sages (core/residents.py)."""
    return code_fingerprint("core", "magi", "data/magi")


def sage_key(sage: SageName, slot: int) -> str:
    """The key of a resident sage's agent (Ray actor name ``Sage:<sage>-<slot>-<code version>``)."""
    return f"{sage.value}-{slot}-{sage_code()}"


# Sages of an older code are retired once no deliberation holds a conversation on them.
register_resident(ResidentKind(f"{Sage.__name__}:", sage_code, Sage.conversations.__name__))


def slot_of(deliberation: str, replicas: int) -> int:
    """Which of a sage's ``replicas`` serves ``deliberation`` (the same one for all its phases)."""
    return int.from_bytes(deliberation.encode(), "big") % replicas if replicas > 1 else 0


class Seats:
    """One deliberation's seats at the council: a resident sage per name, and its conversation there."""

    def __init__(
        self,
        deliberation: str,
        runtime: Runtime,
        council: CouncilSettings,
        llm: LLMSettings,
        systems: Mapping[SageName, str],
        *,
        clients: Mapping[SageName, LLMClient] | None = None,
        outputs: Mapping[str, type[BaseModel]] | None = None,
    ) -> None:
        self.deliberation = deliberation
        self.runtime = runtime
        self.council = council
        self.llm = llm
        self.systems = dict(systems)
        self.clients = dict(clients or {})
        self.outputs = dict(outputs or {})
        self.handles: dict[SageName, Handle[Sage]] = {}
        self.slot = slot_of(deliberation, council.sage_replicas)

    async def _handle(self, sage: SageName) -> Handle[Sage]:
        handle = await self.runtime.get_or_create(
            Sage, sage, key=sage_key(sage, self.slot), namespace=DEFAULT_NAMESPACE, detached=True
        )
        self.handles[sage] = handle
        return handle

    def _open_call(self, sage: SageName, handle: Handle[Sage]) -> Call[bool]:
        expiry = EXPIRY_CALLS * self.council.timeout_s + 60.0
        return handle.call(
            Sage.open,
            self.deliberation,
            system=self.systems[sage],
            llm=self.llm,
            budget_tokens=self.council.context_budget_tokens,
            expires_after_s=expiry,
            client=self.clients.get(sage),
            outputs=self.outputs or None,
        )

    async def open(self) -> None:
        """A conversation on each sage; a sage found dead is created anew once. Raises when one cannot
        be opened (no council without its three sages)."""
        sages = list(SAGES)
        calls = [self._open_call(s, await self._handle(s)) for s in sages]
        timeout = max(self.council.timeout_s, STARTUP_TIMEOUT_S)  # the first use per cluster starts the actors
        outcomes = await self.runtime.gather(calls, timeout)
        for sage, outcome in zip(sages, outcomes, strict=True):
            if outcome.ok:
                continue
            error = outcome.error or RuntimeError("no answer")
            if not self.runtime.lost(error):
                raise error
            log.warning("sage %s was gone (%s); starting it again", sage.display, first_line(error))
            await self.reseat(sage, error)

    async def reseat(self, sage: SageName, error: BaseException) -> bool:
        """After a failed call: when the sage's actor is gone (or no longer knows this deliberation),
        find or create it again and open a fresh conversation there. True when the history was lost."""
        if not (self.runtime.lost(error) or isinstance(error, UnknownDeliberation)):
            return False
        if self.runtime.lost(error):
            self.runtime.forget(self.handles[sage])
        handle = await self._handle(sage)
        timeout = max(self.council.timeout_s, STARTUP_TIMEOUT_S)
        (outcome,) = await self.runtime.gather([self._open_call(sage, handle)], timeout)
        if not outcome.ok:
            raise outcome.error or RuntimeError(f"sage {sage.display} could not be started again")
        return True

    def call(self, sage: SageName, method: Any, *args: Any) -> Call[Any]:
        """``method`` of the sage's agent for this deliberation (its id goes first)."""
        return self.handles[sage].call(method, self.deliberation, *args)

    async def close(self) -> dict[str, list[dict[str, str]]]:
        """Drop this deliberation's conversations; their last histories are the answer (one call per
        sage for both). Never raises: a sage that is gone holds nothing, and a second close is a no-op."""
        handles, self.handles = self.handles, {}
        sages = list(handles)
        calls = [handles[s].call(Sage.close, self.deliberation) for s in sages]
        outcomes = await self.runtime.gather(calls, self.council.timeout_s)
        histories: dict[str, list[dict[str, str]]] = {}
        for sage, outcome in zip(sages, outcomes, strict=True):
            if outcome.ok:
                histories[sage.value] = outcome.value or []
            else:
                log.info("sage %s: conversation not closed (%s); it expires", sage.display, outcome.error)
        return histories


async def held_conversations(runtime: Runtime, council: CouncilSettings) -> dict[str, int]:
    """How many conversations each resident sage holds now (tests, benchmarks: none may leak)."""
    counts: dict[str, int] = {}
    for sage in SAGES:
        for slot in range(council.sage_replicas):
            handle = await runtime.get_or_create(
                Sage, sage, key=sage_key(sage, slot), namespace=DEFAULT_NAMESPACE, detached=True
            )
            counts[f"{sage.value}-{slot}"] = await handle.call(Sage.conversations)
    return counts


__all__ = ["EXPIRY_CALLS", "STARTUP_TIMEOUT_S", "Seats", "held_conversations", "sage_code", "sage_key", "slot_of"]
