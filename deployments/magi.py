"""Serve app ``magi`` (route prefix ``/magi``): the council over HTTP.

- ``POST /magi/ask`` ``{prompt, rounds?, threshold?, timeout?, weighted?, anonymous?, shufflePeers?,
  earlyStop?, seed?, runs?}`` -> 200 with the JSON of ``magi ask --format json`` (``decision``,
  ``exitCode``, ``votes`` ...; a RunsReport when ``runs`` > 1). A bad body is 422, no LLM 503.
- ``POST /magi/ask/stream`` (same body) -> ``text/event-stream``: ``phase``/``sage``/``decided``
  progress events as the deliberation goes (magi/events.py), then one ``result`` event (or ``error``).
- ``GET /magi/healthz``: ready when an LLM is configured (deployments/base.py: the skeleton, guard
  and body cap included).
"""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import logging
from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from core.errors import ConfigError, InputError, first_line
from core.settings import Settings
from deployments.answers import event_stream, invalid_option, no_llm, progress_frames
from deployments.base import AppService, binder, builder, http_api, service
from deployments.readiness import llm_check
from magi.events import EventCallback

log = logging.getLogger(__name__)
APP_NAME = "magi"
ROUTE_PREFIX = "/magi"

api = http_api("MAGI council", "Three sages decide: Thinking, Debate, Voting.")


class AskRequest(BaseModel):
    """The body of ``POST /magi/ask``; bounds come from the ``magi`` settings (magi/options.py)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    prompt: str = Field(description="The request the council decides on.")
    rounds: int | None = None
    threshold: Literal["majority", "unanimous"] | None = None
    timeout: float | None = Field(None, description="Timeout of one sage call in seconds.")
    weighted: bool | None = None
    anonymous: bool | None = None
    shuffle_peers: bool | None = Field(None, alias="shufflePeers")
    early_stop: Literal["off", "unanimous", "stable", "both"] | None = Field(None, alias="earlyStop")
    seed: int | None = None
    runs: int | None = None


# The sages are actors of their own; the replica waits.
@service(api, name="MagiCouncil", max_ongoing_requests=32)
class MagiService(AppService):
    def __init__(self, settings: Settings) -> None:
        from magi.plugins import load_plugins, overrides_for
        from magi.settings import MagiSettings

        super().__init__(settings)
        self._overrides = overrides_for(load_plugins(MagiSettings.of(settings)))
        self.checks = [llm_check(settings, "POST /magi/ask")]

    def _prepare(self, body: AskRequest) -> tuple[str, Settings]:
        from magi.api import check_llm
        from magi.options import AskOptions, apply_options, clean_question
        from magi.settings import MagiSettings

        options = AskOptions(
            rounds=body.rounds,
            threshold=body.threshold,
            timeout_s=body.timeout,
            weighted=body.weighted,
            anonymous=body.anonymous,
            shuffle_peers=body.shuffle_peers,
            early_stop=body.early_stop,
            seed=body.seed,
            runs=body.runs,
        )
        names = {"magi.shuffle_peers": "shufflePeers", "magi.early_stop": "earlyStop", "magi.timeout_s": "timeout"}
        settings = apply_options(self.settings, options, origin="request field", names=names)
        prompt = clean_question(body.prompt, max_chars=MagiSettings.of(settings).max_prompt_chars, where="prompt")
        check_llm(settings, "POST /magi/ask")
        return prompt, settings

    async def _run(self, prompt: str, settings: Settings, on_event: EventCallback | None = None) -> dict[str, Any]:
        from core.runtime import RayRuntime
        from magi.api import ask
        from magi.output import to_json

        runtime = RayRuntime()
        try:
            return to_json(await ask(prompt, settings, runtime, overrides=self._overrides, on_event=on_event))
        finally:
            await runtime.close()

    def _accepted(self, body: AskRequest) -> tuple[str, Settings] | JSONResponse:
        """The question and its settings, or the answer refusing the request (422; 503 without an LLM)."""
        try:
            return self._prepare(body)
        except (ConfigError, InputError) as exc:
            if isinstance(exc, ConfigError) and "needs an LLM" in first_line(exc):
                return no_llm()
            return invalid_option(exc)

    @api.post("/ask")
    async def ask(self, body: AskRequest) -> JSONResponse:
        accepted = self._accepted(body)
        if isinstance(accepted, JSONResponse):
            return accepted
        return JSONResponse(await self._run(*accepted))

    @api.post("/ask/stream")
    async def ask_stream(self, body: AskRequest) -> Any:
        accepted = self._accepted(body)
        if isinstance(accepted, JSONResponse):
            return accepted
        prompt, settings = accepted
        return event_stream(progress_frames(lambda report: self._run(prompt, settings, on_event=report)))


build_app = binder(MagiService)
app = builder(build_app)

__all__ = ["APP_NAME", "ROUTE_PREFIX", "AskRequest", "MagiService", "api", "app", "build_app"]
