"""Metrics of the five systems, through Ray's metrics API, with an in-process record beside it.

A system declares its metrics once, next to its code::

    METRICS = MetricSet("research")
    RUNS = METRICS.counter("runs", "Research runs by final state.", ("state",))
    ...
    RUNS.inc(state="done")

which names the family ``magi_research_runs`` (Ray exports it to Prometheus as
``ray_magi_research_runs_total``) and labels every sample with ``system="research"``. Every process
keeps its own running totals in memory, so a unit test asserts on ``RUNS.value(state="done")``
without Ray, and ``magi doctor`` can show them.

Inside a Ray worker or driver the samples also go to ``ray.util.metrics`` (made on first use, so a
module can declare its metrics before ``ray.init``), in batches: a sample recorded on a request's path
only updates this process's figures, and one background thread per process hands what accumulated to
Ray every :data:`EXPORT_INTERVAL_S` (and at exit). Ray's own call releases and retakes the GIL, which
on a busy replica cost a request up to a thread switch interval per sample; Ray exports to Prometheus
every few seconds anyway, so the batch delays nothing an operator sees.

Labels are categories (system, app, role, phase, state, outcome ...), never user data or ids: a value
is cut to :data:`MAX_LABEL_CHARS` and a label not declared is an error, so a cardinality explosion
cannot slip in.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

PREFIX = "magi_"
RAY_PREFIX = "ray_"  # what Ray's exporter puts before every application metric
MAX_LABEL_CHARS = 64
EXPORT_INTERVAL_S = 1.0  # how often accumulated samples are handed to Ray (see the module docstring)
DEFAULT_BUCKETS_S = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 180.0, 600.0)
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# telemetry.enabled, read from the environment at import: every process of a cluster, before any settings
ENABLED = os.environ.get("MAGI_TELEMETRY_ENABLED", "true").strip().lower() not in ("false", "0", "no", "off")
Kind = Literal["counter", "gauge", "histogram"]
LabelKey = tuple[tuple[str, str], ...]


@dataclass
class Metric:
    """One metric family: declared labels, the in-process totals, and its Ray twin once Ray is up."""

    name: str
    description: str
    kind: Kind
    labels: tuple[str, ...]
    fixed: dict[str, str]
    buckets: tuple[float, ...] = ()
    _values: dict[LabelKey, float] = field(default_factory=dict, repr=False)
    _counts: dict[LabelKey, int] = field(default_factory=dict, repr=False)
    _ray: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Samples not yet handed to Ray: a counter's increments summed, a gauge's last value, a histogram's
    # observations, by label set.
    _pending: dict[LabelKey, Any] = field(default_factory=dict, repr=False)

    @property
    def exported_name(self) -> str:
        """The Prometheus name Ray exports (``_total`` for a counter's samples, ``_bucket``/``_sum``/
        ``_count`` for a histogram's)."""
        return RAY_PREFIX + self.name

    def _tags(self, given: dict[str, object]) -> dict[str, str]:
        unknown = set(given) - set(self.labels)
        if unknown:
            raise ValueError(f"metric {self.name}: label(s) {sorted(unknown)} not declared; declared: {self.labels}")
        tags = dict(self.fixed)
        for key in self.labels:
            tags[key] = str(given.get(key, ""))[:MAX_LABEL_CHARS]
        return tags

    def _record(self, value: float, tags: dict[str, str], *, add: bool) -> None:
        if not ENABLED:
            return
        key = tuple(sorted(tags.items()))
        to_ray = _ray_running()
        with self._lock:
            if add:
                self._values[key] = self._values.get(key, 0.0) + value
                self._counts[key] = self._counts.get(key, 0) + 1
            else:
                self._values[key] = value
            if to_ray:
                if self.kind == "histogram":
                    self._pending.setdefault(key, []).append(value)
                elif add:
                    self._pending[key] = self._pending.get(key, 0.0) + value
                else:
                    self._pending[key] = value
        if to_ray:
            _EXPORTER.ensure_started()

    def export(self) -> None:
        """Hand the samples accumulated since the last call to Ray (the exporter thread calls this)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        twin = self._twin()
        if twin is None:
            return
        for key, value in pending.items():
            tags = dict(key)
            if self.kind == "counter":
                twin.inc(value, tags=tags)
            elif self.kind == "gauge":
                twin.set(value, tags=tags)
            else:
                for observed in value:
                    twin.observe(observed, tags=tags)

    def _twin(self) -> Any:
        """The ``ray.util.metrics`` object, made once Ray runs in this process (else None)."""
        if self._ray is not None:
            return self._ray
        if not _ray_running():
            return None
        from ray.util import metrics

        keys = tuple(self.fixed) + self.labels
        with self._lock:
            if self._ray is None:
                if self.kind == "counter":
                    self._ray = metrics.Counter(self.name, self.description, tag_keys=keys)
                elif self.kind == "gauge":
                    self._ray = metrics.Gauge(self.name, self.description, tag_keys=keys)
                else:
                    self._ray = metrics.Histogram(self.name, self.description, list(self.buckets), tag_keys=keys)
        return self._ray

    def value(self, **labels: object) -> float:
        """This process's total (counter), last value (gauge) or sum (histogram) for ``labels``; labels
        left out are summed over."""
        wanted = {k: str(v) for k, v in labels.items()}
        with self._lock:
            return sum(v for key, v in self._values.items() if wanted.items() <= dict(key).items())

    def count(self, **labels: object) -> int:
        """How many samples were recorded for ``labels`` (a histogram's observations)."""
        wanted = {k: str(v) for k, v in labels.items()}
        with self._lock:
            return sum(c for key, c in self._counts.items() if wanted.items() <= dict(key).items())

    def samples(self) -> list[tuple[dict[str, str], float]]:
        """Every label set recorded in this process with its value."""
        with self._lock:
            return [(dict(key), value) for key, value in self._values.items()]

    def reset(self) -> None:
        """Forget this process's totals (tests); what Ray exported is not touched."""
        with self._lock:
            self._values.clear()
            self._counts.clear()


class Counter(Metric):
    def inc(self, amount: float = 1.0, **labels: object) -> None:
        if amount < 0:
            raise ValueError(f"metric {self.name}: a counter only goes up (got {amount})")
        if amount:
            self._record(float(amount), self._tags(labels), add=True)


class Gauge(Metric):
    def set(self, value: float, **labels: object) -> None:
        self._record(float(value), self._tags(labels), add=False)

    def add(self, delta: float, **labels: object) -> None:
        """Move the gauge by ``delta`` (things in flight: +1 on start, -1 on end) in this process."""
        tags = self._tags(labels)
        key = tuple(sorted(tags.items()))
        with self._lock:
            current = self._values.get(key, 0.0) + delta
        self._record(current, tags, add=False)

    @contextmanager
    def tracking(self, **labels: object) -> Iterator[None]:
        """+1 for the duration of the block."""
        self.add(1, **labels)
        try:
            yield
        finally:
            self.add(-1, **labels)


class Histogram(Metric):
    def observe(self, value: float, **labels: object) -> None:
        self._record(float(value), self._tags(labels), add=True)

    @contextmanager
    def timer(self, **labels: object) -> Iterator[None]:
        """Observe the block's wall time in seconds (also when it raises)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.observe(time.perf_counter() - started, **labels)


REGISTRY: dict[str, Metric] = {}


class _Exporter:
    """The one thread per process that hands accumulated samples to Ray (and does so once more at exit)."""

    def __init__(self) -> None:
        self._started = False
        self._lock = threading.Lock()

    def ensure_started(self) -> None:
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            threading.Thread(target=self._run, name="magi-metrics-export", daemon=True).start()
            atexit.register(export_now)
            self._started = True

    def _run(self) -> None:
        while True:
            time.sleep(EXPORT_INTERVAL_S)
            export_now()


_EXPORTER = _Exporter()


def export_now() -> None:
    """Hand every metric's accumulated samples to Ray now (the exporter's tick; a process about to end)."""
    if not _ray_running():
        return
    for metric in list(REGISTRY.values()):
        try:
            metric.export()
        except Exception:  # Ray shutting down under us: the figures stay in this process's totals
            return


class MetricSet:
    """The metrics of one system (``system`` label and ``magi_<system>_`` name prefix)."""

    def __init__(self, system: str) -> None:
        if not _NAME.match(system):
            raise ValueError(f"system name {system!r}: use lower-case letters, digits and _")
        self.system = system

    def _declare(self, cls: type[Metric], short: str, description: str, labels: Sequence[str], **extra: Any) -> Any:
        name = f"{PREFIX}{self.system}_{short}"
        if not _NAME.match(short) or not description:
            raise ValueError(f"metric {name}: needs a snake_case name and a description")
        found = REGISTRY.get(name)
        if found is not None:  # a module imported twice (tests, reloads): the one family
            if type(found) is not cls or found.labels != tuple(labels):
                raise ValueError(f"metric {name} declared twice with different shapes")
            return found
        metric = cls(name, description, cls.__name__.lower(), tuple(labels), {"system": self.system}, **extra)  # type: ignore[arg-type]
        REGISTRY[name] = metric
        return metric

    def counter(self, short: str, description: str, labels: Sequence[str] = ()) -> Counter:
        metric: Counter = self._declare(Counter, short, description, labels)
        return metric

    def gauge(self, short: str, description: str, labels: Sequence[str] = ()) -> Gauge:
        metric: Gauge = self._declare(Gauge, short, description, labels)
        return metric

    def histogram(
        self, short: str, description: str, labels: Sequence[str] = (), buckets: Sequence[float] = DEFAULT_BUCKETS_S
    ) -> Histogram:
        metric: Histogram = self._declare(Histogram, short, description, labels, buckets=tuple(buckets))
        return metric


def _ray_running() -> bool:
    """Ray is connected in this process (a driver after ``ray.init``, or any worker)."""
    import sys

    ray = sys.modules.get("ray")  # not imported: certainly not running, and importing costs seconds
    return bool(ray is not None and ray.is_initialized())


def exported_names() -> dict[str, Metric]:
    """Every declared family by the names Prometheus shows (``ray_magi_x_total``, ``..._bucket`` ...)."""
    names: dict[str, Metric] = {}
    for metric in REGISTRY.values():
        base = metric.exported_name
        suffixes = {"counter": ("_total", ""), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}
        for suffix in suffixes[metric.kind]:
            names[base + suffix] = metric
    return names


def load_all_metrics() -> dict[str, Metric]:
    """Import every part's metrics module (registered under the ``magi.metrics`` entry-point group, as
    settings sections are, so this module names none of them, core's LLM metrics included) and return the registry."""
    import importlib
    from importlib.metadata import entry_points

    for point in entry_points(group=METRICS_GROUP):
        importlib.import_module(point.value)
    return dict(REGISTRY)


METRICS_GROUP = "magi.metrics"

__all__ = [
    "DEFAULT_BUCKETS_S",
    "ENABLED",
    "EXPORT_INTERVAL_S",
    "MAX_LABEL_CHARS",
    "METRICS_GROUP",
    "PREFIX",
    "RAY_PREFIX",
    "REGISTRY",
    "Counter",
    "Gauge",
    "Histogram",
    "Metric",
    "MetricSet",
    "export_now",
    "exported_names",
    "load_all_metrics",
]
