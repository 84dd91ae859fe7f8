"""Where agents run: a Ray cluster, or in this process for tests and tiny jobs.

Engines depend only on :class:`Runtime` (``spawn`` an agent, ``call`` a method, ``gather`` with a
timeout, ``kill``), so their coordination logic is tested in-process and runs unchanged on Ray.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from core.errors import RuntimeSetupError
from core.events import Event, EventSink, parse_event
from core.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Outcome(Generic[T]):
    """What one call ended with: a value, an error, or a timeout (``error`` then says so)."""

    value: T | None = None
    error: BaseException | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


class Runtime(Protocol):
    def spawn(self, cls: type[Any], *args: Any, num_cpus: float = 1.0, spread: bool = False,
              max_concurrency: int | None = None, name: str | None = None, **kwargs: Any) -> Any:
        """Start an agent; ``spread`` asks for placement across nodes (pools); ``name`` makes it findable
        (Ray: ``ray.get_actor(name)``, e.g. to inspect or stop one agent of a run)."""

    def call(self, handle: Any, method: str, *args: Any, **kwargs: Any) -> Any: ...

    def gather(self, pending: Sequence[Any], timeout_s: float | None) -> list[Outcome[Any]]: ...

    def kill(self, handle: Any) -> None: ...

    def event_sink(self, sink: EventSink) -> EventSink: ...

    def total_cpus(self) -> float: ...

    def flush_events(self) -> None:
        """Deliver every event agents have emitted so far, before the caller emits its own."""


async def acall(handle: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``method`` on an agent from inside another agent: Ray actor handle or plain object."""
    bound = getattr(handle, method)
    remote = getattr(bound, "remote", None)
    if remote is not None:
        return await remote(*args, **kwargs)
    result = bound(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


class InProcessRuntime:
    """Agents as plain objects sharing one event loop thread: the seam's reference implementation.

    One loop (not a thread per call) lets agents await each other as they do on Ray; blocking work
    inside an agent must go to a thread (``asyncio.to_thread``), exactly as in a Ray async actor.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="magi-agents", daemon=True)
        self._thread.start()

    def spawn(self, cls: type[Any], *args: Any, num_cpus: float = 1.0, spread: bool = False,
              max_concurrency: int | None = None, name: str | None = None, **kwargs: Any) -> Any:
        return cls(*args, **kwargs)

    def call(self, handle: Any, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(acall(handle, method, *args, **kwargs), self._loop)

    def gather(self, pending: Sequence[Future[Any]], timeout_s: float | None) -> list[Outcome[Any]]:
        wait_futures(pending, timeout=timeout_s)
        outcomes: list[Outcome[Any]] = []
        for fut in pending:
            if not fut.done():
                fut.cancel()  # cancels the coroutine: the agent sees CancelledError at its next await
                outcomes.append(Outcome(error=TimeoutError(f"timed out after {timeout_s} s"), timed_out=True))
                continue
            try:
                outcomes.append(Outcome(value=fut.result(timeout=0)))
            except FutureTimeout as exc:  # pragma: no cover - done() was checked
                outcomes.append(Outcome(error=exc, timed_out=True))
            except Exception as exc:
                outcomes.append(Outcome(error=exc))
        return outcomes

    def kill(self, handle: Any) -> None:
        """Objects in this process cannot be killed; their calls were cancelled by ``gather``."""

    def event_sink(self, sink: EventSink) -> EventSink:
        return sink

    def total_cpus(self) -> float:
        return float(os.cpu_count() or 1)

    def flush_events(self) -> None:
        """Agents in this process emit straight into the sink: nothing is ever pending."""

    def shutdown(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class _QueueSink:
    """Picklable sink that actors use to push events into a Ray queue read by the driver."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    def emit(self, event: Event) -> None:
        try:
            self._queue.put_nowait(event.model_dump(mode="json"))
        except Exception as exc:  # a full or dead queue must never fail the agent's work
            log.warning("dropped progress event %s: %s", event.type, exc)


class RayRuntime:
    """Agents as Ray actors. Events cross a ``ray.util.queue.Queue`` pumped by a driver thread."""

    def __init__(self) -> None:
        import ray

        if not ray.is_initialized():
            raise RuntimeSetupError("Ray is not initialised; call core.runtime.start_ray() first")
        self._ray = ray
        self._pumps: list[tuple[threading.Event, threading.Thread, Any]] = []
        self._pump_lock = threading.Lock()  # one reader at a time keeps events in order
        self._sinks: list[tuple[Any, EventSink]] = []

    def spawn(self, cls: type[Any], *args: Any, num_cpus: float = 1.0, spread: bool = False,
              max_concurrency: int | None = None, name: str | None = None, **kwargs: Any) -> Any:
        options: dict[str, Any] = {"num_cpus": num_cpus}
        if name is not None:
            options["name"] = name
        if spread:
            options["scheduling_strategy"] = "SPREAD"
        if max_concurrency is not None:
            options["max_concurrency"] = max_concurrency
        return self._ray.remote(cls).options(**options).remote(*args, **kwargs)

    def call(self, handle: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(handle, method).remote(*args, **kwargs)

    def gather(self, pending: Sequence[Any], timeout_s: float | None) -> list[Outcome[Any]]:
        ready, _ = self._ray.wait(list(pending), num_returns=len(pending), timeout=timeout_s)
        ready_set = set(ready)
        outcomes: list[Outcome[Any]] = []
        for ref in pending:
            if ref not in ready_set:
                # Not recursive: calls the task made into shared actors (the run's collector) serve others too.
                self._ray.cancel(ref, force=False, recursive=False)
                outcomes.append(Outcome(error=TimeoutError(f"timed out after {timeout_s} s"), timed_out=True))
                continue
            try:
                outcomes.append(Outcome(value=self._ray.get(ref)))
            except Exception as exc:
                outcomes.append(Outcome(error=exc))
        return outcomes

    def kill(self, handle: Any) -> None:
        self._ray.kill(handle, no_restart=True)

    def total_cpus(self) -> float:
        return float(self._ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]

    def event_sink(self, sink: EventSink) -> EventSink:
        from ray.util.queue import Queue

        queue = Queue(maxsize=10_000, actor_options={"num_cpus": 0})
        stop = threading.Event()

        def pump() -> None:
            while True:
                stopping = stop.is_set()
                self._deliver(queue, sink)
                if stopping:
                    return
                time.sleep(0.05)

        thread = threading.Thread(target=pump, name="magi-event-pump", daemon=True)
        thread.start()
        self._pumps.append((stop, thread, queue))
        self._sinks.append((queue, sink))
        return _QueueSink(queue)

    def _deliver(self, queue: Any, sink: EventSink) -> None:
        with self._pump_lock:
            for item in _drain(queue):
                sink.emit(parse_event(item))

    def flush_events(self) -> None:
        for queue, sink in self._sinks:
            self._deliver(queue, sink)

    def close(self) -> None:
        """Deliver every queued event, then stop the pumps and their queues."""
        for stop, thread, queue in self._pumps:
            stop.set()
            thread.join(timeout=10)
            queue.shutdown()
        self._pumps.clear()
        self._sinks.clear()


def _drain(queue: Any) -> list[dict[str, Any]]:
    try:
        size = queue.qsize()
        return list(queue.get_nowait_batch(size)) if size else []
    except Exception as exc:
        log.warning("could not read progress events: %s", exc)
        return []


def current_node_id() -> str:
    """The Ray node this code runs on ("local" outside Ray), for reporting where work happened."""
    import ray

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"


def local_cpus(settings: Settings) -> int:
    return settings.ray_num_cpus or os.cpu_count() or 1


def start_ray(settings: Settings, *, address: str | None = None, quiet: bool = True) -> None:
    """Attach to ``address``/``RAY_ADDRESS`` or start a local single-node Ray (dashboard off).

    A local Ray keeps Ray >= 2.59's default, token authentication (a token is generated in
    ``~/.ray/auth_token`` when missing), without its start-up warning; set ``RAY_AUTH_MODE``
    yourself to choose otherwise. Setting it here would be too late: Ray reads it at import.
    """
    import ray

    if ray.is_initialized():
        return
    target = address or settings.ray_address
    common: dict[str, Any] = {
        "logging_level": logging.WARNING if quiet else logging.INFO,
        "log_to_driver": not quiet,
    }
    try:
        if target:
            ray.init(address=target, **common)
        else:
            if quiet:
                logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
            ray.init(address="local", num_cpus=local_cpus(settings), include_dashboard=False, **common)
    except ray.exceptions.AuthenticationError as exc:
        raise RuntimeSetupError(
            f"Ray cluster at {target} refused this client: token authentication is on. Put the cluster's "
            "token in RAY_AUTH_TOKEN (or ~/.ray/auth_token), or start the cluster with RAY_AUTH_MODE=disabled"
        ) from exc
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {target}" if target else "a local Ray"
        fix = "check RAY_ADDRESS / --address" if target else "check free memory and /tmp space"
        raise RuntimeSetupError(f"could not start or attach to {where}: {exc}; {fix}") from exc


def stop_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


@contextmanager
def ray_runtime(settings: Settings, *, address: str | None = None) -> Iterator[RayRuntime]:
    """Start (or attach to) Ray for the duration of a command, and shut a local one down after."""
    import ray

    owned = not ray.is_initialized()
    start_ray(settings, address=address)
    runtime = RayRuntime()
    try:
        yield runtime
    finally:
        runtime.close()
        if owned:
            stop_ray()
