"""MkDocs hooks that keep the site true to the code; each problem is a warning, so `--strict` fails.

- A generated page (docs/generate.py) that no longer matches the code.
- A repository path in backticks (`research/engine.py`, `data/magi/personas/*.yaml`) that does not
  exist, on a page or in README.md; a link from README.md to a page that does not exist.
- A shipped scripted model named as `python:MODULE:FUNCTION` whose module or function is gone.
- A fenced `magi.yaml` example (a yaml block whose first line is `# magi.yaml`) that the settings
  loader refuses.
- A `curl` example against localhost:8000 whose route no app serves, or whose JSON body the route's
  OpenAPI schema refuses (an unknown or missing field, a wrong type).
- A `magi` command in a bash block whose subcommand or `--option` the CLI does not have.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import logging
import re
import shlex
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
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "(", ")"}
CURL = re.compile(r"\bcurl\b((?:[^\n\\]|\\\n)*)")
CURL_URL = re.compile(r"localhost:8000(/[^\s'\"]*)")
CURL_METHOD = re.compile(r"-X\s+([A-Z]+)")
CURL_BODY = re.compile(r"-d\s+'([^']*)'")
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
    found += [problem for command in CURL.findall(text) if (problem := _curl_problem(command))]
    for block in BASH_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            found += _magi_command_problems(line)
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


@functools.cache
def _routes() -> list[tuple[str, re.Pattern[str], dict[str, Any] | None, dict[str, Any]]]:
    """(method, path pattern, JSON body schema, components) of every route of every Serve app."""
    from deployments.apps import load_serve_config

    routes = []
    for app in load_serve_config().applications:
        spec = generate._openapi_of(app.import_path, app.name)
        components = spec.get("components", {})
        for path, operations in spec["paths"].items():
            full = generate._joined(app.route_prefix, path)
            pattern = re.compile("^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(full)) + "/?$")
            for method, operation in operations.items():
                content = operation.get("requestBody", {}).get("content", {})
                schema = content.get("application/json", {}).get("schema")
                routes.append((method.upper(), pattern, schema, components))
    return routes


def _curl_problem(command: str) -> str | None:
    from jsonschema import Draft202012Validator

    url = CURL_URL.search(command)
    if url is None:
        return None
    path = url.group(1).split("?")[0]
    explicit = CURL_METHOD.search(command)
    method = explicit.group(1) if explicit else ("POST" if CURL_BODY.search(command) else "GET")
    matches = [r for r in _routes() if r[0] == method and r[1].match(path)]
    if not matches:
        return f"`curl` example: no Serve app answers {method} {path}"
    body = CURL_BODY.search(command)
    _, _, schema, components = matches[0]
    if body is None or schema is None:
        return None
    try:
        document = json.loads(body.group(1))
    except ValueError as err:
        return f"`curl` example: the body of {method} {path} is not JSON ({err})"
    validator = Draft202012Validator({**schema, "components": components})
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    if errors:
        return f"`curl` example: {method} {path} refuses its body: {errors[0].message}"
    return None


@functools.cache
def _cli() -> tuple[Any, dict[str, Any]]:
    """The ``magi`` parser and its subcommands' parsers (bundled plugin commands included)."""
    from cli.main import build_parser

    parser = build_parser([])
    return parser, _subcommands(parser)


def _magi_command_problems(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []  # not a complete shell line (an unmatched quote in an example's comment)
    start = next((i for i, token in enumerate(tokens) if _runs_magi(tokens, i)), None)
    if start is None:
        return []
    words = []
    for token in tokens[start + 1 :]:
        if token in SHELL_OPERATORS:
            break
        words.append(token)
    parser, commands = _cli()
    top = parser._option_string_actions
    position = 0
    while position < len(words) and words[position].startswith("-"):
        action = top.get(words[position].split("=")[0])
        if action is None:
            return [f"`magi {words[position]}`: no such option of magi"]
        position += 1 + (action.nargs != 0 and "=" not in words[position])
    if position == len(words):
        return []
    name = words[position]
    if name not in commands:
        return [f"`magi {name}`: no such command (commands: {', '.join(commands)})"]
    command, rest = commands[name], words[position + 1 :]
    for word in rest:  # a command with commands of its own (magi kb ingest)
        nested = _subcommands(command)
        if word in nested:
            command, name = nested[word], f"{name} {word}"
            continue
        if not word.startswith("-"):
            break
    known = command._option_string_actions
    return [
        f"`magi {name} {word}`: no such option of magi {name}"
        for word in rest
        if word.startswith("--") and word.split("=")[0] not in known
    ]


def _runs_magi(tokens: list[str], index: int) -> bool:
    """Whether ``tokens[index]`` is the command being run: first, or after an operator or VAR=value."""
    if not (tokens[index] == "magi" or tokens[index].endswith("/magi")):
        return False
    before = index - 1
    while before >= 0 and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[before]):
        before -= 1
    return before < 0 or tokens[before] in SHELL_OPERATORS


def _subcommands(parser: Any) -> dict[str, Any]:
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
