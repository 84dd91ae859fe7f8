"""Live figures of a running cluster, read from the Prometheus text its nodes export (what
``magi doctor --cluster`` prints): every ``ray_magi_*`` sample summed over nodes and processes,
by family and labels (Ray's own labels such as ``WorkerId`` left out)."""

from __future__ import annotations

import re
from collections import defaultdict

import httpx

_SAMPLE = re.compile(r"^(ray_magi_[a-z0-9_]+?)(?:\{(.*)\})?\s+([0-9.eE+\-]+|NaN)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
RAY_LABELS = frozenset(
    {"Component", "NodeAddress", "SessionName", "Version", "WorkerId", "JobId", "instance", "otel_scope_name"}
    | {"otel_scope_schema_url", "otel_scope_version"}
)


def magi_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(family, labels): value}`` of the ``ray_magi_`` samples in one Prometheus page (no buckets)."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if match is None or match.group(1).endswith("_bucket"):
            continue
        labels = tuple(sorted((k, v) for k, v in _LABEL.findall(match.group(2) or "") if k not in RAY_LABELS))
        found[(match.group(1), labels)] += float(match.group(3))
    return dict(found)


def scrape(urls: list[str], timeout_s: float = 5.0) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The sum of :func:`magi_samples` over every node's metrics page; a node that does not answer
    is left out (its error is the caller's to report by comparing the count)."""
    total: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
    for url in urls:
        try:
            page = httpx.get(url, timeout=timeout_s).text
        except httpx.HTTPError:
            continue
        for key, value in magi_samples(page).items():
            total[key] += value
    return dict(total)


def cluster_metric_urls() -> list[str]:
    """Every alive node's metrics page (Ray must be connected to the cluster)."""
    import ray

    return [
        f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics"
        for n in ray.nodes()  # type: ignore[no-untyped-call]
        if n.get("Alive") and n.get("MetricsExportPort")
    ]


__all__ = ["RAY_LABELS", "cluster_metric_urls", "magi_samples", "scrape"]
