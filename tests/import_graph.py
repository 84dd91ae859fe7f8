"""The project's import graph and its one layer table: what may import what, and no cycles.

Every ``import`` statement counts, wherever it stands: at the top of a module, inside a function
(where a cycle hides) or under ``if TYPE_CHECKING:`` (a type names its module too). An edge goes to
the module named (``from a.b import c`` reaches ``a.b.c`` when that is a module, else ``a.b``).

Run it for the figures: ``.venv/bin/python -m tests.import_graph`` prints JSON (modules, edges,
edges that break the table, cycles). ``tests/unit/test_layers.py`` asserts both lists are empty.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Data flows downward: a package may import the packages of a lower layer and its own package, never
# one of a higher layer. Packages of one layer do not import each other (the systems stay apart).
LAYERS: dict[str, int] = {
    "core": 0,  # settings framework, llm, store, storage, runtime, events base, errors base
    "scrapers": 1,  # search, fetch, extract
    "nlp": 1,  # language, entities, claims, conflicts
    "actors": 2,  # shared workers of no system: collector, NLP pool
    "sessions": 2,  # virtual actors of the chat systems
    "research": 3,
    "magi": 3,
    "critic": 3,
    "router": 3,
    "advisor": 3,
    "deployments": 4,  # Ray Serve apps
    "cli": 4,  # the `magi` command
    "jobs": 4,  # Ray jobs
}

# The only imports inside one layer, each with its reason.
SIDEWAYS: dict[tuple[str, str], str] = {
    ("cli", "deployments"): "`magi serve` starts the Serve apps",
    ("cli", "jobs"): "`magi research --batch` submits the batch job",
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}"


def package_of(module: str) -> str:
    return module.split(".", 1)[0]


def project_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under the given top-level packages."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a project module (None for other libraries)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, modules: Mapping[str, Path]) -> list[Edge]:
    """Every import of one module (top level, function-local and TYPE_CHECKING alike)."""
    edges: list[Edge] = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                kept = here[: len(here) - (node.level - 1)]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            known = _known(target, modules)
            if known is not None and known != module:
                edges.append(Edge(module, known, node.lineno))
    return edges


def import_edges(root: Path = ROOT, packages: Iterable[str] = LAYERS) -> list[Edge]:
    modules = project_modules(root, packages)
    edges = {e for name, path in modules.items() for e in imports_of(name, path, modules)}
    return sorted(edges, key=lambda e: (e.source, e.target, e.line))


def breaks_layers(edge: Edge, layers: Mapping[str, int] = LAYERS) -> str | None:
    """Why ``edge`` breaks the table ("upward", "sideways", "between apps"), or None when it is allowed."""
    source, target = package_of(edge.source), package_of(edge.target)
    if source == target:
        return "between apps" if _apps_of_two_systems(edge, layers) else None
    if target not in layers or source not in layers:
        return "unlisted"
    if layers[target] > layers[source]:
        return "upward"
    if layers[target] == layers[source] and (source, target) not in SIDEWAYS:
        return "sideways"
    return None


def _apps_of_two_systems(edge: Edge, layers: Mapping[str, int]) -> bool:
    """``deployments.critic`` importing ``deployments.research``: one system's interface module
    reaching into another's (loading the critic would load the research stack). Shared helpers
    (``deployments.base``) are for that."""
    systems = {name for name, layer in layers.items() if layer == max(layers.values()) - 1}
    source, target = edge.source.split("."), edge.target.split(".")
    return (
        len(source) > 1
        and len(target) > 1
        and source[1] in systems
        and target[1] in systems
        and source[1] != target[1]
        and layers.get(source[0]) == max(layers.values())
    )


def cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a loop (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: a deep import chain must not hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def report(root: Path = ROOT, layers: Mapping[str, int] = LAYERS) -> dict[str, object]:
    """The figures: counts, the edges that break the table (by kind) and the cycles."""
    edges = import_edges(root, layers)
    broken: dict[str, list[str]] = {}
    broken_packages: set[str] = set()
    for edge in edges:
        kind = breaks_layers(edge, layers)
        if kind is not None:
            broken.setdefault(kind, []).append(str(edge))
            broken_packages.add(f"{package_of(edge.source)} -> {package_of(edge.target)} ({kind})")
    packages = {(package_of(e.source), package_of(e.target)) for e in edges}
    top, systems = max(layers.values()), max(layers.values()) - 1
    into_systems = [
        e for e in edges if layers.get(package_of(e.source)) == top and layers.get(package_of(e.target)) == systems
    ]
    return {
        "modules": len(project_modules(root, layers)),
        "edges": len(edges),
        "package_edges": len({p for p in packages if p[0] != p[1]}),
        "edges_breaking_layers": {kind: len(found) for kind, found in sorted(broken.items())},
        "package_edges_breaking_layers": sorted(broken_packages),
        "breaking": broken,
        "cycles": cycles(edges),
        # Not enforced yet: the interfaces (cli, deployments, jobs) should reach a system through its api.
        "interface_edges_into_systems": len(into_systems),
        "interface_edges_through_api": sum(1 for e in into_systems if e.target.endswith(".api")),
    }


def main() -> None:
    print(json.dumps(report(), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
