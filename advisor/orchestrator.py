"""The orchestrator: every message passes through it (the spec's 親エージェント).

One turn: open the session; answer a pending consent question, or detect the message's mode
(keywords, else the LLM); a change of mode asks for consent and keeps the current mode until it is
given; compress a long history; delegate to the mode's agent (each file it makes is listed in the
session before the client hears of it); write the turn to the session. It holds no state of its
own: everything lives in the session (its actor and the store), so any replica can serve any turn,
and a session whose actor died continues from the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from advisor.agents import AgentResult, mode1, mode2
from advisor.compression import compress
from advisor.conversation import Begin, Commit
from advisor.events import (
    AdvisorEvent,
    AnswerDelta,
    ConsentAsked,
    FileMade,
    HistoryCompressed,
    ModeDetected,
    ModeSelected,
    TurnDone,
)
from advisor.metrics import TURNS, count_event
from advisor.modes import Detection, detect
from advisor.policy import Mode, modes
from advisor.settings import LLM_ROLES, AdvisorSettings
from advisor.tools.base import ToolContext
from core.errors import InputError
from core.llm.base import LLMClient
from core.llm.factory import require_llm
from core.settings import Settings
from core.validation import invalid_unicode_at, without_controls
from sessions.gateway import COMMIT_STORE_WAIT_S, SessionGateway
from sessions.models import HistoryEntry

Consent = Literal["accept", "refuse"]


def _stamp(base: datetime, offset: int) -> datetime:
    """Entries of one turn get strictly increasing timestamps (compression cuts by timestamp)."""
    return base + timedelta(microseconds=offset)


class Orchestrator:
    def __init__(self, settings: Settings, sessions: SessionGateway, llm: LLMClient | None = None) -> None:
        if llm is None:
            llm = require_llm(settings.llm, "the advisor", LLM_ROLES[0])
            for role in LLM_ROLES[1:]:  # every role of a turn has a model that can answer it
                require_llm(settings.llm, "the advisor", role)
        self.settings = settings
        self.section = AdvisorSettings.of(settings)
        self.policy = self.section.session_policy()
        self.sessions = sessions
        self.llm = llm

    def check_message(self, message: str) -> str:
        bad = invalid_unicode_at(message)
        if bad is not None:
            raise InputError(f"message is not valid Unicode (a lone surrogate at character {bad + 1}); send UTF-8 text")
        text = without_controls(message).strip()
        if not any(char.isalnum() for char in text):
            raise InputError("message is empty once control characters are removed; write what you would like to ask")
        if len(text) > self.section.max_message_chars:
            raise InputError(
                f"message has {len(text)} characters; keep it under {self.section.max_message_chars} "
                "(advisor.max_message_chars)"
            )
        return text

    async def turn(
        self,
        session_id: str,
        owner: str,
        message: str | None = None,
        consent: Consent | None = None,
        user_attributes: dict[str, Any] | None = None,
        section: AdvisorSettings | None = None,
        client: str | None = None,
    ) -> AsyncIterator[AdvisorEvent]:
        """Events of one turn: ``mode``, ``consent``, ``tool``, ``file``, ``delta``, then ``done``;
        ``section`` carries this turn's options (``ADVISOR_OPTIONS`` applied to a request's fields);
        a new session counts against ``client`` (None: ``owner``)."""
        section = section or self.section
        texts = modes()
        if consent is None:
            message = self.check_message(message or "")
        state = await self.sessions.update(session_id, owner, Begin(user_attributes), client)
        pending = state.attributes.get("pending")
        current: Mode | None = state.mode if state.mode in ("mode1", "mode2") else None  # type: ignore[assignment]
        user = dict(state.attributes.get("user_attributes", {}))
        started = datetime.now(UTC)
        entries: list[HistoryEntry] = []
        attributes: dict[str, Any] = {}
        prefix = ""

        if consent is not None:
            if not pending:
                raise InputError("consent: no mode change is waiting for an answer in this session; send a message")
            target: Mode = pending["to"]
            names = {"from_name": texts.names.get(current or "mode1", ""), "to_name": texts.names[target]}
            if consent == "accept":
                mode: Mode = target
                prefix = texts.consent.accepted.format(**names)
            else:
                mode = current or "mode1"
                prefix = texts.consent.refused.format(**names)
            message = str(pending["message"])
            attributes["pending"] = None
            # The pending message and the consent question are in the history already; the agent
            # gets the message as the newest one, after everything else.
            history = [e for e in state.history if "consent" not in e.metadata]
            last = max((i for i, e in enumerate(history) if e.role == "user" and e.text == message), default=None)
            if last is not None:
                del history[last]
        else:
            assert message is not None
            if pending:
                attributes["pending"] = None  # a new message instead of an answer: the change is declined
            detection: Detection = await detect(
                self.llm, message, state.history, current, section.mode_threshold, section.classify_history
            )
            yield ModeDetected(
                mode=detection.mode, by=detection.by, keyword=detection.keyword, confidence=detection.confidence
            )
            entries.append(
                HistoryEntry(
                    role="user",
                    text=message,
                    agent=current,
                    timestamp=_stamp(started, 0),
                    metadata={"detected": detection.mode, "by": detection.by},
                )
            )
            if current is not None and detection.mode != current:
                names = {"from_name": texts.names[current], "to_name": texts.names[detection.mode]}
                question = texts.consent.ask.format(**names)
                entries.append(
                    HistoryEntry(
                        role="assistant",
                        text=question,
                        agent="orchestrator",
                        timestamp=_stamp(started, 1),
                        metadata={"consent": detection.mode},
                    )
                )
                attributes["pending"] = {"to": detection.mode, "from": current, "message": message}
                await self.sessions.update(
                    session_id,
                    owner,
                    Commit(entries, self.policy, attributes=attributes),
                    store_wait_s=COMMIT_STORE_WAIT_S,
                )
                yield ModeSelected(mode=current, name=texts.names[current])
                yield ConsentAsked(from_mode=current, to=detection.mode, text=question)
                yield TurnDone(mode=current, text=question, pending=detection.mode)
                return
            mode = current or detection.mode
            history = list(state.history)  # the message itself is in ``entries``: the agent adds it last

        yield ModeSelected(mode=mode, name=texts.names[mode])
        if prefix:
            yield AnswerDelta(text=prefix + "\n\n")
        compression = await compress(self.llm, history, self.section.compress_after, self.section.keep_recent)
        if compression is not None:
            history = [compression.summary, *history[compression.cutoff_index :]]
            yield HistoryCompressed(entries=compression.cutoff_index, by=compression.summary.metadata["by"])
        result: AgentResult | None = None
        listed: list[dict[str, Any]] = []  # files already written to the session during the turn
        if mode == "mode1":
            agent = mode1(self.llm, self.settings, history, message, user, self.section.web_results)
        else:
            ctx = ToolContext(
                self.settings,
                session_id=session_id,
                llm=self.llm,
                earlier=list(state.attributes.get("tool_results", [])),
                negotiation_rounds=list(state.attributes.get("negotiation", [])),
                files=list(state.attributes.get("files", [])),
            )
            agent = mode2(self.llm, ctx, history, message, user, self.section.max_tool_turns)
        async for event in agent:
            if isinstance(event, AgentResult):
                result = event
                continue
            count_event(event)
            if isinstance(event, FileMade):
                # Listed in the session before it is announced: a client fetches a file as soon as it
                # hears of it (the chat page does), and the file endpoint serves only listed files.
                await self.sessions.update(
                    session_id, owner, Commit([], self.policy, files=[event.file]), store_wait_s=COMMIT_STORE_WAIT_S
                )
                listed.append(event.file)
            yield event
        assert result is not None
        text = (prefix + "\n\n" + result.text) if prefix else result.text
        offset = len(entries)
        for i, entry in enumerate(result.entries):
            entries.append(entry.model_copy(update={"timestamp": max(entry.timestamp, _stamp(started, offset + i))}))
        entries.append(HistoryEntry(role="assistant", text=text, agent=mode, timestamp=_stamp(datetime.now(UTC), 0)))
        await self.sessions.update(
            session_id,
            owner,
            Commit(
                entries,
                self.policy,
                mode=mode,
                attributes=attributes,
                files=[f for f in result.files if f not in listed],
                tool_results=result.tool_results,
                negotiation=result.negotiation,
                summary=compression.summary if compression else None,
                compress_until=compression.until if compression else None,
            ),
            store_wait_s=COMMIT_STORE_WAIT_S,
        )
        TURNS.inc(mode=mode)
        yield TurnDone(mode=mode, text=text, files=result.files)


__all__ = ["Consent", "Orchestrator"]
