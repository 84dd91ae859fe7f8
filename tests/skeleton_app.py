"""A Serve app that is its routes and nothing more, on the skeleton (deployments/base.py): what
tests/integration/test_serve_skeleton.py runs on real Serve to check what every app gets from it."""

# No ``from __future__ import annotations``: Serve's class-based FastAPI views need real annotations.
import asyncio
import logging
import os
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from core.runtime import Handle, RayRuntime
from core.settings import Settings
from core.store import open_store
from deployments.answers import error_answer, failure_text
from deployments.base import AppService, binder, builder, http_api, service
from deployments.readiness import actors_check, store_check, task_check

log = logging.getLogger("tests.skeleton_app")
api = http_api("Skeleton test app", "Nothing but its routes.", open_paths=("/page",))


class Worker:
    """A warm worker actor as the apps keep them (critic judges, NLP workers)."""

    def pid(self) -> int:
        return os.getpid()


class EchoBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    count: int = Field(ge=1, le=10)
    text: str = Field("", max_length=100_000)


# Serve asks every second, so a test sees a broken replica replaced without waiting long.
@service(api, name="SkeletonTestService", max_ongoing_requests=8, health_check_period_s=1, health_check_timeout_s=5)
class SkeletonService(AppService):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.store = open_store(settings)
        self.ticker = asyncio.get_running_loop().create_task(asyncio.sleep(10**9))
        self.runtime = RayRuntime()
        self.workers: dict[int, Handle[Worker]] = {}  # started on first use, like the critic's pool
        self.checks = [
            store_check(self.store),
            task_check("ticker", lambda: self.ticker),
            actors_check("workers", lambda: self.workers),
        ]

    @api.get("/page")
    async def page(self) -> JSONResponse:
        return JSONResponse({"page": "holds no data"})

    @api.post("/echo")
    async def echo(self, body: EchoBody) -> JSONResponse:
        log.warning("skeleton echo %d", body.count)
        return JSONResponse({"count": body.count, "length": len(body.text), "pid": os.getpid()})

    @api.post("/fail")
    async def fail(self) -> JSONResponse:
        try:
            open("/srv/magi-secret-folder/token.txt").close()
        except OSError as exc:
            return error_answer(500, f"could not read the token: {failure_text(exc)}")
        return JSONResponse({})  # pragma: no cover - the folder does not exist

    @api.post("/worker")
    async def worker(self) -> dict[str, Any]:
        if 0 not in self.workers:
            self.workers[0] = self.runtime.spawn(Worker, num_cpus=0)
        return {"pid": await self.workers[0].call(Worker.pid)}

    @api.post("/kill-worker")
    async def kill_worker(self) -> dict[str, Any]:
        import ray

        ray.kill(self.workers[0].target, no_restart=True)
        return {"killed": True}

    @api.post("/stop-ticker")
    async def stop_ticker(self) -> dict[str, Any]:
        self.ticker.cancel()
        return {"stopped": True}


build_app = binder(SkeletonService)
app = builder(build_app)
