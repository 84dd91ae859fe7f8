"""Personas and prompts are policy files: the bundled ones load; mistakes name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from magi.models import SAGES
from magi.personas import bundled_personas, load_personas
from magi.prompts import bundled_prompts, load_prompts


def test_bundled_personas_name_their_sage_first_and_prompts_load() -> None:
    personas = bundled_personas()
    assert set(personas) == set(SAGES)
    for sage, persona in personas.items():
        assert persona.system.startswith(sage.display)
    assert "{peers}" in bundled_prompts().debate


def test_a_persona_that_does_not_name_its_sage_first_is_refused(tmp_path: Path) -> None:
    for sage in SAGES:
        text = f"version: 1\nsage: {sage.value}\ntitle: {sage.display}\nfocus: f\nsystem: |\n  {sage.display} here.\n"
        (tmp_path / f"{sage.value}.yaml").write_text(text, encoding="utf-8")
    assert set(load_personas(tmp_path)) == set(SAGES)
    bad = tmp_path / "casper.yaml"
    bad.write_text("version: 1\nsage: casper\ntitle: CASPER-3\nfocus: f\nsystem: You are helpful.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"casper\.yaml: line 1, column 1: .*must start with the sage's title"):
        load_personas(tmp_path)
    bad.unlink()
    with pytest.raises(ConfigError, match="no persona for casper"):
        load_personas(tmp_path)


def test_a_prompt_template_with_an_unknown_field_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prompts.yaml"
    path.write_text(
        "version: 1\nthinking: '{question} {secret}'\ndebate: '{peers}'\nvoting: '{peers}'\nsummary: '{turns}'\n"
        "labels: x\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"thinking: unknown field\(s\) \['secret'\]"):
        load_prompts(path)
