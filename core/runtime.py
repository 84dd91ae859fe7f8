"""Where agents run: a Ray cluster, or this process (tests and tiny jobs), behind one async seam.

Systems coordinate agents only through :class:`Runtime`: ``spawn`` an agent or ``get_or_create`` a keyed
one (one actor per session id), ``call`` a method by reference (``runtime.call(handle, Agent.run, x)``,
so a renamed method is a type error, not a string that fails at run time), ``gather`` calls with a
timeout, ``kill``, ``close``. The in-process runtime gives the same semantics with plain objects on
the caller's event loop, so protocol logic is tested without Ray and runs unchanged on a cluster.

Inside an agent, another agent's handle is used the same way: ``await handle.call(Collector.collect, urls)``.

A call to a Ray actor carries the caller's request id and trace context (core/telemetry/context.py):
actors are started from :func:`contextual` subclasses whose one extra method runs the called method
inside that context, so log lines, events, rows and spans of the work carry the id on any node.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from core.errors import RuntimeSetupError
from core.events import Event, EventSink, parse_event
from core.settings import Settings
from core.telemetry.context import adopted, carried
from core.telemetry.metrics import export_now
from core.telemetry.tracing import span
from core.version import code_fingerprint

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
DEFAULT_NAMESPACE = "magi"
EVENT_POLL_S = 0.05


@dataclass
class Outcome(Generic[T]):
    """What one call ended with: a value, an error, or a timeout (``error`` then says so)."""

    value: T | None = None
    error: BaseException | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


class Call(Generic[R]):
    """One pending method call: await it for the result, or cancel it. A caller cancelled while it
    awaits the call cancels the call too (in the agent's process): work nobody waits for any more,
    such as the model calls of a request whose client left, stops instead of running on."""

    def __init__(self, future: asyncio.Future[R], cancel: Callable[[], None]) -> None:
        self.future = future
        self._cancel = cancel

    def __await__(self) -> Generator[Any, None, R]:
        return self._result().__await__()

    async def _result(self) -> R:
        try:
            return await self.future
        except asyncio.CancelledError:
            if self.future.cancelled():  # the caller was cancelled, not the call's own outcome
                self._cancel()
            raise

    def cancel(self) -> None:
        self._cancel()


class Handle(Generic[T]):
    """A typed reference to an agent: a Ray actor handle or, in process, the object itself. Picklable
    when remote, so handles can be passed to other agents."""

    def __init__(self, target: Any, *, remote: bool, name: str | None = None) -> None:
        self.target = target
        self.remote = remote
        self.name = name

    @overload
    def call(
        self, method: Callable[Concatenate[T, P], Coroutine[Any, Any, R]], *args: P.args, **kwargs: P.kwargs
    ) -> Call[R]: ...

    @overload
    def call(self, method: Callable[Concatenate[T, P], R], *args: P.args, **kwargs: P.kwargs) -> Call[R]: ...

    def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Call[Any]:
        """Call ``method`` (a function of the agent's class) on this agent; must run inside an event loop."""
        if self.remote:
            return _ray_call(self.target, method.__name__, args, kwargs)
        return _local_call(self.target, method.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"Handle({self.name or type(self.target).__name__}, remote={self.remote})"


CONTEXT_CALL = "magi_call_in_context"  # the method every actor started by a runtime has (see contextual)
_CONTEXTUAL: dict[type[Any], type[Any]] = {}


# Each call ends by handing its metrics to Ray (core/telemetry/metrics.py batches them): an actor the
# runtime kills after its last call (a research agent, a timed-out critic worker) loses none.
def _sync_in_context(self: Any, context: dict[str, Any], method: str, *args: Any, **kwargs: Any) -> Any:
    try:
        with adopted(context), span("actor.call", agent=type(self).__name__, method=method):
            return getattr(self, method)(*args, **kwargs)
    finally:
        export_now()


async def _async_in_context(self: Any, context: dict[str, Any], method: str, *args: Any, **kwargs: Any) -> Any:
    try:
        with adopted(context), span("actor.call", agent=type(self).__name__, method=method):
            result = getattr(self, method)(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result
    finally:
        export_now()


def contextual(cls: type[T]) -> type[T]:
    """``cls`` with :data:`CONTEXT_CALL`, which runs a method in the caller's carried context: async
    when ``cls`` has async methods (Ray then makes it an async actor anyway), else sync, so adding it
    never changes how Ray runs the actor's methods. Made once per class."""
    found = _CONTEXTUAL.get(cls)
    if found is None:
        is_async = any(inspect.iscoroutinefunction(getattr(cls, n, None)) for n in dir(cls) if not n.startswith("__"))
        call = _async_in_context if is_async else _sync_in_context
        found = type(cls.__name__, (cls,), {CONTEXT_CALL: call, "__module__": cls.__module__, "__doc__": cls.__doc__})
        _CONTEXTUAL[cls] = found
    return found


def _ray_call(actor: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call[Any]:
    import ray

    context = carried()
    if context is None:
        ref = getattr(actor, method).remote(*args, **kwargs)
    else:
        ref = getattr(actor, CONTEXT_CALL).remote(context, method, *args, **kwargs)
    # Not recursive: calls this one made into shared actors (a run's collector) serve other callers too.
    return Call(asyncio.wrap_future(ref.future()), lambda: ray.cancel(ref, force=False, recursive=False))


def _local_call(target: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call[Any]:
    bound = getattr(target, method)

    async def run() -> Any:
        with span("actor.call", agent=type(target).__name__, method=method):
            if inspect.iscoroutinefunction(bound):
                return await bound(*args, **kwargs)
            # A sync method is blocking work (a model, a parser): off the loop, as in its own Ray process.
            result = await asyncio.to_thread(bound, *args, **kwargs)
            return await result if inspect.isawaitable(result) else result

    task = asyncio.ensure_future(run())

    def cancel() -> None:
        task.cancel()

    return Call(task, cancel)


class Runtime(Protocol):
    def spawn(
        self,
        cls: type[T],
        *args: Any,
        num_cpus: float = 1.0,
        spread: bool = False,
        max_concurrency: int | None = None,
        name: str | None = None,
        node_id: str | None = None,
        restarts: int = 0,
        **kwargs: Any,
    ) -> Handle[T]:
        """Start an agent; ``spread`` asks for placement across nodes (pools); ``name`` makes it findable;
        ``node_id`` (from :func:`current_node_id`) pins it to that node, e.g. where its files are.
        ``restarts``: an agent whose process or node dies is started again (elsewhere, unless pinned)
        up to that many times, and the calls it was running are sent again to the new one: for agents
        whose state can be rebuilt (an NLP worker, the collector over its store caches)."""

    async def get_or_create(
        self,
        cls: type[T],
        *args: Any,
        key: str,
        namespace: str = DEFAULT_NAMESPACE,
        detached: bool = False,
        num_cpus: float = 0.0,
        **kwargs: Any,
    ) -> Handle[T]:
        """The agent of ``cls`` for ``key`` in ``namespace``, created with ``args`` only if it does not exist.
        ``detached`` agents outlive the process that created them (Ray: until killed)."""

    def call(self, handle: Handle[T], method: Callable[Concatenate[T, P], Any], *args: Any, **kwargs: Any) -> Call[Any]:
        """``handle.call(method, ...)``: here for symmetry with the rest of the seam."""

    async def gather(self, calls: Sequence[Call[R]], timeout_s: float | None) -> list[Outcome[R]]:
        """Wait for every call; those still running after ``timeout_s`` are cancelled and time out."""

    def kill(self, handle: Handle[Any]) -> None: ...

    def lost(self, error: BaseException) -> bool:
        """Whether a call failed because its agent is gone (its process died or was killed)."""

    def forget(self, handle: Handle[Any]) -> None:
        """Drop a keyed agent's handle (its agent is gone): the next ``get_or_create`` finds or makes it anew."""

    def event_sink(self, sink: EventSink) -> EventSink:
        """A sink agents can emit into (it may cross processes) that ends in ``sink``."""

    async def flush_events(self) -> None:
        """Deliver every event agents have emitted so far, before the caller emits its own."""

    def total_cpus(self) -> float: ...

    async def close(self) -> None:
        """Deliver pending events and release what the runtime holds (not the agents' cluster)."""


async def gather_calls(calls: Sequence[Call[R]], timeout_s: float | None) -> list[Outcome[R]]:
    """Both runtimes' ``gather``: all settle (like Promise.allSettled); late ones are cancelled, and so
    is every call when the gatherer itself is cancelled (its caller left)."""
    if calls:
        try:
            await asyncio.wait([c.future for c in calls], timeout=timeout_s)
        except asyncio.CancelledError:
            for call in calls:
                if not call.future.done():
                    call.cancel()
                    call.future.cancel()
            raise
    outcomes: list[Outcome[R]] = []
    for call in calls:
        if not call.future.done():
            call.cancel()
            call.future.cancel()
            outcomes.append(Outcome(error=TimeoutError(f"timed out after {timeout_s} s"), timed_out=True))
        elif call.future.cancelled():
            outcomes.append(Outcome(error=asyncio.CancelledError("the call was cancelled")))
        elif (error := call.future.exception()) is not None:
            outcomes.append(Outcome(error=error))
        else:
            outcomes.append(Outcome(value=call.future.result()))
    return outcomes


class InProcessRuntime:
    """Agents as plain objects on the caller's event loop: the seam's reference implementation.

    Async methods run as tasks on the loop (agents await each other as on Ray); sync methods run in a
    thread, as blocking work would in an actor's own process.
    """

    def __init__(self) -> None:
        self._keyed: dict[tuple[str, str, str], Handle[Any]] = {}
        self._lock = asyncio.Lock()

    def spawn(
        self,
        cls: type[T],
        *args: Any,
        num_cpus: float = 1.0,
        spread: bool = False,
        max_concurrency: int | None = None,
        name: str | None = None,
        node_id: str | None = None,
        restarts: int = 0,
        **kwargs: Any,
    ) -> Handle[T]:
        return Handle(cls(*args, **kwargs), remote=False, name=name)

    async def get_or_create(
        self,
        cls: type[T],
        *args: Any,
        key: str,
        namespace: str = DEFAULT_NAMESPACE,
        detached: bool = False,
        num_cpus: float = 0.0,
        **kwargs: Any,
    ) -> Handle[T]:
        async with self._lock:
            found = self._keyed.get((namespace, cls.__qualname__, key))
            if found is None:
                found = Handle(cls(*args, **kwargs), remote=False, name=keyed_name(cls, key))
                self._keyed[(namespace, cls.__qualname__, key)] = found
            return found

    def call(self, handle: Handle[T], method: Callable[Concatenate[T, P], Any], *args: Any, **kwargs: Any) -> Call[Any]:
        return handle.call(method, *args, **kwargs)

    async def gather(self, calls: Sequence[Call[R]], timeout_s: float | None) -> list[Outcome[R]]:
        return await gather_calls(calls, timeout_s)

    def kill(self, handle: Handle[Any]) -> None:
        """Objects in this process cannot be killed; a keyed one is forgotten (the next get creates anew)."""
        self.forget(handle)

    def lost(self, error: BaseException) -> bool:
        return False  # an object in this process does not die under its caller

    def forget(self, handle: Handle[Any]) -> None:
        self._keyed = {k: h for k, h in self._keyed.items() if h is not handle}

    def event_sink(self, sink: EventSink) -> EventSink:
        return sink

    async def flush_events(self) -> None:
        """Agents in this process emit straight into the sink: nothing is ever pending."""

    def total_cpus(self) -> float:
        return float(os.cpu_count() or 1)

    async def close(self) -> None:
        self._keyed.clear()


def keyed_name(cls: type[Any], key: str) -> str:
    """The Ray actor name of the keyed agent ``cls`` for ``key``, e.g. ``Sage:abc``."""
    return f"{cls.__name__}:{key}"


# Handles of detached keyed agents this process has used: (node id, namespace, name) -> handle.
# Process-wide, because a Serve replica makes a runtime per request while the agents live as long as
# the cluster.
_RESIDENT: dict[tuple[str, str, str], Handle[Any]] = {}


def forget_resident(name: str, namespace: str) -> None:
    """Drop this process's handle of the detached agent ``name`` (it was killed here, e.g. retired as
    old code), so that a later ``get_or_create`` of the same key makes it anew instead of calling it."""
    for key in [k for k in _RESIDENT if k[1:] == (namespace, name)]:
        del _RESIDENT[key]


class _QueueSink:
    """Picklable sink that actors use to push events into a Ray queue read by the driver."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    def emit(self, event: Event) -> None:
        try:
            self._queue.put_nowait(event.model_dump(mode="json"))
        except Exception as exc:  # a full or dead queue must never fail the agent's work
            log.warning("dropped progress event %s: %s", event.type, exc)


@contextmanager
def _restart_advisory_silenced() -> Iterator[None]:
    """Ray's core worker prints, once per process and straight to file descriptor 2, an advisory when
    a restartable actor is given actor handles or stored arguments (ray-project/ray#53727): a restart
    would fail once those are gone. This runtime keeps them for as long as it runs (``_pinned``; the
    handles are its own agents), so the advisory is no news to the user whose terminal it would reach
    (whose errors are one line). So while Ray creates a restartable actor (synchronously, a moment),
    descriptor 2 points at /dev/null."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class RayRuntime:
    """Agents as Ray actors. Events cross a ``ray.util.queue.Queue`` drained by a task on the caller's loop."""

    def __init__(self) -> None:
        import ray

        if not ray.is_initialized():
            raise RuntimeSetupError("Ray is not initialised; call core.runtime.start_ray() first")
        self._ray = ray
        self._queues: list[tuple[Any, EventSink]] = []
        self._pump: asyncio.Task[None] | None = None
        self._deliver_lock = asyncio.Lock()  # one reader at a time keeps events in order
        # The constructor arguments of restartable agents, held until close(): Ray keeps large ones in
        # the object store, and a restart after they went out of scope would fail (ray-project/ray#53727).
        self._pinned: list[Any] = []

    def spawn(
        self,
        cls: type[T],
        *args: Any,
        num_cpus: float = 1.0,
        spread: bool = False,
        max_concurrency: int | None = None,
        name: str | None = None,
        node_id: str | None = None,
        restarts: int = 0,
        **kwargs: Any,
    ) -> Handle[T]:
        if spread and node_id is not None:
            raise RuntimeSetupError(f"spawn {cls.__name__}: choose spread or node_id, not both")
        options: dict[str, Any] = {"num_cpus": num_cpus}
        if name is not None:
            options["name"] = name
        if spread:
            options["scheduling_strategy"] = "SPREAD"
        if node_id is not None:  # hard affinity: if that node is gone, fail rather than run elsewhere
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
        if max_concurrency is not None:
            options["max_concurrency"] = max_concurrency
        if restarts:
            options |= {"max_restarts": restarts, "max_task_retries": restarts}
            args = tuple(self._ray.put(a) for a in args)
            kwargs = {k: self._ray.put(v) for k, v in kwargs.items()}
            self._pinned += [*args, *kwargs.values()]
        with _restart_advisory_silenced() if restarts else nullcontext():
            actor = self._ray.remote(contextual(cls)).options(**options).remote(*args, **kwargs)
        return Handle(actor, remote=True, name=name)

    async def get_or_create(
        self,
        cls: type[T],
        *args: Any,
        key: str,
        namespace: str = DEFAULT_NAMESPACE,
        detached: bool = False,
        num_cpus: float = 0.0,
        **kwargs: Any,
    ) -> Handle[T]:
        name = keyed_name(cls, key)
        cached = (self._ray.get_runtime_context().get_node_id(), namespace, name)  # a restarted Ray: other node id
        if detached and (known := _RESIDENT.get(cached)) is not None:
            return known  # a resident agent: no lookup in the cluster per use (forget() when it died)
        options: dict[str, Any] = {"name": name, "namespace": namespace, "get_if_exists": True, "num_cpus": num_cpus}
        if detached:
            options["lifetime"] = "detached"
        actor = self._ray.remote(contextual(cls)).options(**options).remote(*args, **kwargs)
        handle: Handle[T] = Handle(actor, remote=True, name=name)
        if detached:
            _RESIDENT[cached] = handle
        return handle

    def call(self, handle: Handle[T], method: Callable[Concatenate[T, P], Any], *args: Any, **kwargs: Any) -> Call[Any]:
        return handle.call(method, *args, **kwargs)

    async def gather(self, calls: Sequence[Call[R]], timeout_s: float | None) -> list[Outcome[R]]:
        return await gather_calls(calls, timeout_s)

    def kill(self, handle: Handle[Any]) -> None:
        self.forget(handle)
        self._ray.kill(handle.target, no_restart=True)

    def lost(self, error: BaseException) -> bool:
        return isinstance(error, self._ray.exceptions.RayActorError)

    def forget(self, handle: Handle[Any]) -> None:
        for key in [k for k, h in _RESIDENT.items() if h is handle]:
            del _RESIDENT[key]

    def total_cpus(self) -> float:
        return float(self._ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]

    def event_sink(self, sink: EventSink) -> EventSink:
        from ray.util.queue import Queue
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # On this process's node: the queue then goes only with its reader, not with a node of agents.
        here = NodeAffinitySchedulingStrategy(self._ray.get_runtime_context().get_node_id(), soft=True)
        queue = Queue(maxsize=10_000, actor_options={"num_cpus": 0, "scheduling_strategy": here})
        self._queues.append((queue, sink))
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._pump_forever())
        return _QueueSink(queue)

    async def _pump_forever(self) -> None:
        while True:
            await self.flush_events()
            await asyncio.sleep(EVENT_POLL_S)

    async def flush_events(self) -> None:
        async with self._deliver_lock:
            for queue, sink in list(self._queues):
                for item in await _drain(queue):
                    sink.emit(parse_event(item))

    async def close(self) -> None:
        """Deliver every queued event, then stop the pump and the queues."""
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
            self._pump = None
        await self.flush_events()
        for queue, _ in self._queues:
            queue.shutdown()
        self._queues.clear()
        self._pinned.clear()


async def _drain(queue: Any) -> list[dict[str, Any]]:
    try:
        size = await queue.actor.qsize.remote()
        return list(await queue.actor.get_nowait_batch.remote(size)) if size else []
    except Exception as exc:
        log.warning("could not read progress events: %s", exc)
        return []


def lost_in_cluster(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is Ray saying an actor, worker, node or object was lost: a
    fault of the cluster, not of the work, so the work may be done again elsewhere."""
    try:
        import ray.exceptions as rx
    except ImportError:  # pragma: no cover - Ray is a dependency
        return False
    lost = (rx.RayActorError, rx.NodeDiedError, rx.WorkerCrashedError, rx.ObjectLostError, rx.LocalRayletDiedError)
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, lost):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def restarted_actor() -> bool:
    """Whether this code runs in a Ray actor that was started again (its process or node died)."""
    import ray

    if not ray.is_initialized():
        return False
    context = ray.get_runtime_context()
    return context.get_actor_id() is not None and bool(context.was_current_actor_reconstructed)


def current_node_id() -> str:
    """The Ray node this code runs on ("local" outside Ray), for reporting where work happened."""
    import ray

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"


def local_cpus(settings: Settings) -> int:
    return settings.ray.num_cpus or os.cpu_count() or 1


LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray takes 127.0.0.1 as the node's address


def keep_ray_on_loopback() -> None:
    """Make a Ray started by this process listen on loopback only. On Linux Ray replaces ``localhost``
    by the machine's outward address, and then its gRPC servers and its three Prometheus exporters
    (autoscaler, dashboard, dashboard agent) listen on every address; with this switch off (read by
    Ray at import, so set for the processes it starts as well) the node's address is 127.0.0.1 and
    nothing listens beyond the machine. Only for a single-node Ray: other nodes could not join it."""
    os.environ[LOOPBACK_ONLY_ENV] = "0"
    import ray._private.ray_constants as ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


_WILDCARDS = ("[::]:", "0.0.0.0:", "[::0]:", ":")


def _on_loopback(address: str) -> str:
    for wildcard in _WILDCARDS:
        if address.startswith(wildcard) and address[len(wildcard) :].isdigit():
            return "127.0.0.1:" + address[len(wildcard) :]
    return address


def loopback_worker_hook() -> None:
    """Ray's ``worker_process_setup_hook`` of a loopback-only Ray: the gRPC servers Python code opens in
    a worker (Serve replicas and proxies ask for ``[::]:0`` whatever the node's address) listen on
    127.0.0.1 instead. Serve's HTTP port is not gRPC: it listens where ``--host`` says."""
    import grpc._server
    import grpc.aio._server

    for server in (grpc._server._Server, grpc.aio._server.Server):
        for method in ("add_insecure_port", "add_secure_port"):
            original = getattr(server, method)
            if getattr(original, "_magi_loopback", False):
                continue

            def bound(self: Any, address: str, *rest: Any, _original: Any = original) -> Any:
                return _original(self, _on_loopback(address), *rest)

            bound._magi_loopback = True  # type: ignore[attr-defined]
            setattr(server, method, bound)


def code_root() -> Path:
    """The folder this project's packages are imported from (a checkout, or site-packages for a wheel)."""
    return Path(__file__).resolve().parent.parent


@contextmanager
def _in_folder(folder: Path) -> Iterator[None]:
    """Run the block with ``folder`` as the working directory.

    ``ray.init`` puts the driver's working directory first on every worker's ``sys.path`` (Ray's
    ``py_driver_sys_path``), so a user's own ``data/`` or ``core/`` folder would shadow this project's
    packages in every actor. Connecting from the project's own code root puts that folder there instead,
    which holds exactly the packages the workers should import."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


LOCAL_START_ATTEMPTS = 3


def start_ray(settings: Settings, *, address: str | None = None, quiet: bool = True, serve: bool = False) -> None:
    """Attach to ``address``/``RAY_ADDRESS`` or start a local single-node Ray (dashboard off, every
    port on loopback: :func:`keep_ray_on_loopback`).

    ``serve``: Serve will run on this local Ray, so its workers get :func:`loopback_worker_hook`. Only
    then: a job-wide setup hook makes every worker start slower (three actors ready in 1.37 s instead
    of 0.78 s, measured), which a research run pays for each agent it starts.

    A local Ray keeps Ray >= 2.59's default, token authentication (a token is generated in
    ``~/.ray/auth_token`` when missing), without its start-up warning; set ``RAY_AUTH_MODE``
    yourself to choose otherwise. Setting it here would be too late: Ray reads it at import.
    """
    import ray

    if ray.is_initialized():
        return
    target = address or settings.ray.address
    common: dict[str, Any] = {
        "logging_level": logging.WARNING if quiet else logging.INFO,
        "log_to_driver": not quiet,
        "namespace": DEFAULT_NAMESPACE,
    }
    try:
        with _in_folder(code_root()):
            if target:
                ray.init(address=target, **common)
            else:
                if quiet:
                    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
                keep_ray_on_loopback()
                for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
                    try:
                        ray.init(
                            address="local",
                            num_cpus=local_cpus(settings),
                            include_dashboard=False,
                            runtime_env={"worker_process_setup_hook": "core.runtime.loopback_worker_hook"}
                            if serve
                            else None,
                            **common,
                        )
                        break
                    except Exception as exc:  # Ray waits a fixed 30 s for its raylet; a busy machine may need more
                        if "timed out during startup" not in str(exc) or attempt == LOCAL_START_ATTEMPTS:
                            raise
                        log.warning("a local Ray did not start in time (attempt %d); trying again", attempt)
                        ray.shutdown()
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


@asynccontextmanager
async def ray_runtime(settings: Settings, *, address: str | None = None) -> AsyncIterator[RayRuntime]:
    """Start (or attach to) Ray for the duration of a command, and shut a local one down after."""
    import ray

    owned = not ray.is_initialized()
    start_ray(settings, address=address)  # in this thread: ray.init installs signal handlers in the main thread
    runtime = RayRuntime()
    try:
        yield runtime
    finally:
        await runtime.close()
        if owned:
            stop_ray()


async def maybe_await(value: Awaitable[T] | T) -> T:
    """The value, awaited when it is awaitable (callbacks that may be sync or async)."""
    return await value if inspect.isawaitable(value) else value


__all__ = [
    "CONTEXT_CALL",
    "DEFAULT_NAMESPACE",
    "LOCAL_START_ATTEMPTS",
    "LOOPBACK_ONLY_ENV",
    "Call",
    "Handle",
    "InProcessRuntime",
    "Outcome",
    "RayRuntime",
    "Runtime",
    "code_fingerprint",
    "code_root",
    "contextual",
    "current_node_id",
    "forget_resident",
    "gather_calls",
    "keep_ray_on_loopback",
    "keyed_name",
    "local_cpus",
    "loopback_worker_hook",
    "lost_in_cluster",
    "maybe_await",
    "ray_runtime",
    "restarted_actor",
    "start_ray",
    "stop_ray",
]
