"""MkDocs hooks that keep the site true to the code; each problem is a warning, so `--strict` fails.

- A generated page (docs/generate.py) that no longer matches the code.
- A repository path in backticks (`research/engine.py`, `data/magi/personas/*.yaml`) that does not
  exist, on a page or in README.md; a link from README.md to a page that does not exist.
- A shipped scripted model named as `python:MODULE:FUNCTION` whose module or function is gone.
- A fenced `magi.yaml` example (a yaml block whose first line is `# magi.yaml`) that the settings
  loader refuses.
"""

from __future__ import annotations

import ast
import itertools
import logging
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

import generate  # noqa: E402  (docs/generate.py, beside this file)

REPO = generate.REPO
log = logging.getLogger(f"mkdocs.plugins.{__name__}")

CODE_SPAN = re.compile(r"`([^`\s]+)`")
PROVIDER = re.compile(r"python:([A-Za-z_][\w.]*):([A-Za-z_]\w*)")
YAML_EXAMPLE = re.compile(r"```yaml\n# magi\.yaml\n(.*?)```", re.DOTALL)
README_LINK = re.compile(r"\]\((docs/[^)#\s]+)")
PLACEHOLDER = re.compile(r"<[^>]*>|\b[A-Z][A-Z_]{2,}\b")  # <feature>, NAME, RUN_ID: any name fits


def on_pre_build(config: Any) -> None:
    stale = generate.stale_pages()
    if stale:
        names = ", ".join(f"docs/{name}" for name in stale)
        raise PluginError(f"stale generated page(s) {names}: run .venv/bin/python docs/generate.py and commit")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for problem in problems(readme):
        log.warning("README.md: %s", problem)
    for target in README_LINK.findall(readme):
        if not (REPO / target).is_file():
            log.warning("README.md links to %s, which does not exist", target)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri in generate.PAGES:
        return markdown  # read off the code: checked by on_pre_build instead
    for problem in problems(markdown):
        log.warning("%s: %s", page.file.src_uri, problem)
    return markdown


def problems(text: str) -> list[str]:
    found = [f"no such path `{span}`" for span in CODE_SPAN.findall(text) if _is_repo_path(span) and not _exists(span)]
    providers = [(m, f) for m, f in PROVIDER.findall(text) if not PLACEHOLDER.fullmatch(m)]
    found += [f"`python:{m}:{f}` names no such function" for m, f in providers if not _defines(m, f)]
    found += [f"magi.yaml example refused: {err}" for block in YAML_EXAMPLE.findall(text) if (err := _refused(block))]
    return found


def _top_folders() -> set[str]:
    return {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")} - {"out", "build"}


TOP = _top_folders()


def _is_repo_path(span: str) -> bool:
    head, sep, _ = span.partition("/")
    return bool(sep) and head in TOP and ":" not in span


def _exists(span: str) -> bool:
    pattern = PLACEHOLDER.sub("*", span.rstrip("/"))
    for expanded in _braces(pattern):
        if not any(True for _ in REPO.glob(expanded)) and not (REPO / expanded).exists():
            return False
    return True


def _braces(pattern: str) -> list[str]:
    """`research/{strategies,facets}.yaml` -> both paths."""
    parts = re.split(r"\{([^{}]*)\}", pattern)
    choices = [[part] if i % 2 == 0 else part.split(",") for i, part in enumerate(parts)]
    return ["".join(combo) for combo in itertools.product(*choices)]


def _defines(module: str, function: str) -> bool:
    base = REPO / module.replace(".", "/")
    source = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    if not source.is_file():
        return False
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    names |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    return function in names


def _refused(block: str) -> str | None:
    from core.errors import MagiError
    from core.settings import load_settings

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as handle:
        handle.write(block)
        handle.flush()
        try:
            load_settings(handle.name)
        except MagiError as err:
            return str(err)
    return None
