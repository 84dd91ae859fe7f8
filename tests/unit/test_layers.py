"""The layer table covers every package, the import graph keeps to it, and nothing imports in a loop.

The table and the graph are in ``tests/import_graph.py``; these tests also run the checker on small
made-up trees, to show that an upward import fails it wherever it hides.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from tests.import_graph import LAYERS, ROOT, SIDEWAYS, Edge, breaks_layers, cycles, import_edges


def _pyproject() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_every_package_has_its_layer() -> None:
    """A new package is shipped (setuptools), type-checked (mypy) and placed in the table, or a test fails."""
    config = _pyproject()["tool"]
    assert isinstance(config, dict)
    shipped = {name.rstrip("*") for name in config["setuptools"]["packages"]["find"]["include"]}
    assert shipped - {"data", "data."} == set(LAYERS)
    checked = {f for f in config["mypy"]["files"] if not f.startswith("docs/")}  # the docs' build scripts
    assert checked == set(LAYERS)
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "data"}
    assert on_disk == set(LAYERS)
    assert all(a in LAYERS and b in LAYERS and LAYERS[a] == LAYERS[b] for a, b in SIDEWAYS)


def test_no_import_breaks_the_layer_table() -> None:
    broken = [f"{edge} ({why})" for edge in import_edges() if (why := breaks_layers(edge))]
    assert not broken, "imports against the layer table (tests/import_graph.py):\n" + "\n".join(broken)


def test_no_modules_import_each_other_in_a_loop() -> None:
    assert cycles(import_edges()) == []


def test_function_local_imports_of_the_real_tree_are_seen() -> None:
    edges = {(e.source, e.target) for e in import_edges()}
    assert ("cli.route", "router.conversation") in edges  # imported inside a function only


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


BASE = {
    "core/__init__.py": "",
    "research/__init__.py": "",
    "research/engine.py": "from core.store import open_store\n\ndef run():\n    return open_store()\n",
}

UPWARD = {
    "at the top": "from research.engine import run\n",
    "inside a function": "def open_store():\n    from research.engine import run\n    return run\n",
    "under TYPE_CHECKING": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import research.engine\n",
    "as a package attribute": "from research import engine\n",
}


@pytest.mark.parametrize("where", list(UPWARD))
def test_an_injected_upward_import_fails(tmp_path: Path, where: str) -> None:
    root = _tree(tmp_path, {**BASE, "core/store.py": UPWARD[where] + "\ndef open_store():\n    pass\n"})
    edges = import_edges(root)
    assert Edge("research.engine", "core.store", 1) in edges
    broken = [(e.source, e.target, breaks_layers(e)) for e in edges if breaks_layers(e)]
    assert broken == [("core.store", "research.engine", "upward")]
    assert cycles(edges) == [["core.store", "research.engine"]]  # and the loop it closes


def test_allowed_imports_pass_and_systems_stay_apart(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            **BASE,
            "core/store.py": "def open_store():\n    pass\n",
            "cli/__init__.py": "",
            "cli/main.py": "from research.engine import run\n",
            "magi/__init__.py": "",
            "magi/protocol.py": "from . import tally\nfrom research.engine import run\n",
            "magi/tally.py": "",
        },
    )
    edges = import_edges(root)
    assert Edge("magi.protocol", "magi.tally", 1) in edges  # relative imports resolve
    verdicts = {(e.source, e.target): breaks_layers(e) for e in edges}
    assert verdicts == {
        ("research.engine", "core.store"): None,
        ("cli.main", "research.engine"): None,
        ("magi.protocol", "magi.tally"): None,
        ("magi.protocol", "research.engine"): "sideways",
    }
    assert cycles(edges) == []


def test_one_systems_app_does_not_import_anothers(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "deployments/__init__.py": "",
            "deployments/base.py": "",
            "deployments/research.py": "from deployments.base import *\n",
            "deployments/critic.py": "from deployments.base import *\nfrom deployments.research import x\n",
        },
    )
    verdicts = {(e.source, e.target): breaks_layers(e) for e in import_edges(root)}
    assert verdicts == {
        ("deployments.research", "deployments.base"): None,
        ("deployments.critic", "deployments.base"): None,
        ("deployments.critic", "deployments.research"): "between apps",
    }


def test_a_loop_inside_one_package_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "research/__init__.py": "",
            "research/a.py": "from research.b import x\n",
            "research/b.py": "def x():\n    from research.c import y\n",
            "research/c.py": "import research.a\n",
        },
    )
    assert cycles(import_edges(root)) == [["research.a", "research.b", "research.c"]]


SYSTEMS = [name for name, layer in LAYERS.items() if layer == LAYERS["research"]]


def test_each_system_ships_its_test_model_in_scripted_py() -> None:
    """One convention: ``<system>/scripted.py`` (``python:<system>.scripted:...``), marked as a test
    model, and no production module imports a test model (only configuration names it)."""
    for system in SYSTEMS:
        doc = ast.get_docstring(ast.parse((ROOT / system / "scripted.py").read_text(encoding="utf-8")))
        assert doc is not None and doc.startswith("Test model of "), f"{system}/scripted.py"
    shipped = {ROOT / system / "scripted.py" for system in SYSTEMS}
    assert [p for package in LAYERS for p in (ROOT / package).rglob("*scripted*.py") if p not in shipped] == []
    test_models = {f"{s}.scripted" for s in SYSTEMS} | {"core.llm.testing"}
    assert [str(e) for e in import_edges() if e.target in test_models and e.source not in test_models] == []
