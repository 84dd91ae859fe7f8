"""The documentation site stays true to the code: generated pages current, every setting documented,
and the build hooks refuse paths, scripted models and ``magi.yaml`` examples that no longer exist."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from core.settings import ENV_ONLY, FOREIGN_ENV, Settings, env_table, registered_sections

REPO = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(REPO / "docs"))
generate = _load("generate", REPO / "docs" / "generate.py")
hooks = _load("magi_docs_hooks", REPO / "docs" / "hooks.py")
record = _load("magi_benchmark_record", REPO / "benchmarks" / "record.py")


def test_committed_generated_pages_match_a_fresh_generation() -> None:
    assert generate.stale_pages() == [], "run .venv/bin/python docs/generate.py and commit the pages"


def test_settings_reference_has_every_registered_key_with_its_variable() -> None:
    page = generate.settings_page()
    variables = dict(env_table())
    sections = registered_sections()
    keys = [k for k in Settings.model_fields if k not in sections]
    keys += [f"{name}.{key}" for name, cls in sections.items() for key in cls.model_fields]
    for dotted in keys:
        assert f'<a id="{dotted}"></a>' in page, dotted
        section, _, key = dotted.rpartition(".")
        own = [v for v, s, k in FOREIGN_ENV if (s, k) == (section, key)]
        if (section, key) in ENV_ONLY and own:  # a secret read from its own variable only
            assert all(f"`{v}`" in page for v in own), dotted
        else:
            assert f"`{variables[dotted]}`" in page, dotted
    for name in sections:
        assert f"\n## {name}\n" in page


def test_http_reference_lists_every_app_of_serve_yaml_with_its_openapi_links() -> None:
    from deployments.apps import load_serve_config

    page = generate.http_page()
    for app in load_serve_config().applications:
        base = app.route_prefix.rstrip("/")
        assert f"\n## {app.name}\n" in page
        assert f"`{base}/openapi.json`" in page and f"`{base}/docs`" in page


def test_hooks_flag_a_missing_path_and_accept_globs_braces_and_placeholders() -> None:
    text = (
        "`research/engine.py` `data/magi/personas/*.yaml` `data/research/{strategies,facets}.yaml` "
        "`data/critic/industries/NAME.yaml` `out/demo/` `research/no_such_module.py`"
    )
    assert hooks.problems(text) == ["no such path `research/no_such_module.py`"]


def test_hooks_flag_a_scripted_model_whose_function_is_gone() -> None:
    good = "python:critic.scripted:judge"
    assert hooks.problems(f"`{good}` and `python:MODULE_OR_FILE:FUNCTION`") == []
    assert hooks.problems("`python:critic.scripted:no_such_judge`") == [
        "`python:critic.scripted:no_such_judge` names no such function"
    ]


def test_hooks_check_magi_yaml_examples_with_the_settings_loader() -> None:
    accepted = "```yaml\n# magi.yaml\nresearch: {agents: 2}\n```\n"
    refused = "```yaml\n# magi.yaml\nresearch: {agentz: 2}\n```\n"
    assert hooks.problems(accepted) == []
    (problem,) = hooks.problems(refused)
    assert "magi.yaml example refused" in problem and "research.agentz" in problem


def test_record_reads_the_json_document_that_ends_a_scripts_output() -> None:
    output = 'loading models\n{"not": "this"} trailing\n' + json.dumps({"ratio": 2.5}, indent=2) + "\n"
    assert record.last_json_document(output) == {"ratio": 2.5}


def test_hooks_check_curl_examples_against_the_apps_openapi() -> None:
    good = (
        "curl -X POST localhost:8000/router/route -H 'content-type: application/json' \\\n"
        """  -d '{"query": "x", "sessionId": "v-1"}'"""
    )
    assert hooks.problems(good) == []
    assert hooks.problems("curl localhost:8000/research/RUN_ID/events") == []
    (unknown_field,) = hooks.problems('curl -X POST localhost:8000/magi/ask -d \'{"prompt": "x", "roundz": 2}\'')
    assert "POST /magi/ask refuses its body" in unknown_field and "roundz" in unknown_field
    assert hooks.problems("curl localhost:8000/nowhere") == ["`curl` example: no Serve app answers GET /nowhere"]


def test_hooks_check_magi_commands_against_the_cli() -> None:
    block = (
        "```bash\n"
        "MAGI_LLM_PROVIDER=x .venv/bin/magi --format json ask --rounds 2 'a question' | head\n"
        "magi kb ingest ./folder --category case_study\n"
        "sudo -u postgres createuser magi\n"
        "```\n"
    )
    assert hooks.problems(block) == []
    wrong = "```bash\nmagi ask --roundz 2 x\nmagi kb ingest d --categoryz y\nmagi nope\n```\n"
    option, nested, command = hooks.problems(wrong)
    assert option == "`magi ask --roundz`: no such option of magi ask"
    assert nested == "`magi kb ingest --categoryz`: no such option of magi kb ingest"
    assert command.startswith("`magi nope`: no such command (commands: research, doctor,")
