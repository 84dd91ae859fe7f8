"""core.policy: one loader for versioned YAML policy files, with errors that point at file, line and key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, Field

from core.errors import ConfigError
from core.policy import PolicyModel, load_policy, validate_policy


class Rule(BaseModel):
    name: str
    score: float = Field(ge=0, le=1)


class Rules(PolicyModel):
    policy_name: ClassVar[str] = "test rules"

    default: float = 0.5
    rules: tuple[Rule, ...] = ()


class RulesV2(Rules):
    policy_version: ClassVar[int] = 2


def write(tmp_path: Path, text: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\ndefault: 0.4\nrules:\n  - {name: gov, score: 0.9}\n")
    rules = load_policy(path, Rules)
    assert rules == Rules(version=1, default=0.4, rules=(Rule(name="gov", score=0.9),))
    assert load_policy(path, RulesV2).version == 1  # older formats stay readable by newer code


def test_a_file_without_a_version_says_what_to_add(tmp_path: Path) -> None:
    path = write(tmp_path, "default: 0.4\n")
    with pytest.raises(ConfigError, match=r"test rules .*rules\.yaml: no `version:` key; add `version: 1`"):
        load_policy(path, Rules)


def test_a_newer_version_names_its_line_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, "# comment\ndefault: 0.4\nversion: 3\n")
    with pytest.raises(ConfigError, match=r"rules\.yaml, line 3, column 1: version 3 is newer .*up to 2.*upgrade"):
        load_policy(path, RulesV2)
    for bad in ("version: '1'", "version: 0", "version: true"):
        with pytest.raises(ConfigError, match=r"line 1, column 1: version must be a whole number from 1 to 1"):
            load_policy(write(tmp_path, bad + "\n"), Rules)


@pytest.mark.parametrize("text", ["", "- version: 1\n", "just a string\n"])
def test_a_file_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match=r"rules\.yaml.*expected a mapping of keys starting with `version: 1`"):
        load_policy(write(tmp_path, text), Rules)


def test_a_yaml_syntax_error_gives_the_parsers_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nrules:\n  - {name: gov, score: 0.9\n")
    with pytest.raises(ConfigError, match=r"rules\.yaml, line 4, column 1: not valid YAML \(while parsing a flow"):
        load_policy(path, Rules)
    path = write(tmp_path, "version: 1\ndefault: 0.4\n  bad: indent\n")
    with pytest.raises(ConfigError, match=r"rules\.yaml, line 3, column 6: not valid YAML"):
        load_policy(path, Rules)


def test_a_validation_error_names_the_key_and_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, "version: 1\ndefault: 0.4\nrules:\n  - name: gov\n    score: 0.9\n  - name: blog\n    score: 7\n"
    )
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "rules.yaml: line 7, column 5: rules[1] ('blog').score: Input should be less than or equal to 1"
        ),
    ):
        load_policy(path, Rules)


def test_a_missing_key_points_at_the_entry_and_a_typo_at_itself(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nrules:\n  - name: gov\n    score: 0.9\n  - name: blog\n")
    with pytest.raises(ConfigError, match=re.escape("line 5, column 5: rules[1] ('blog').score: Field required")):
        load_policy(path, Rules)
    path = write(tmp_path, "version: 1\ndefualt: 0.4\n")
    with pytest.raises(ConfigError, match=re.escape("line 2, column 1: defualt: unknown key (a typo?)")):
        load_policy(path, Rules)


def test_lines_survive_aliases_and_flow_style(tmp_path: Path) -> None:
    path = write(
        tmp_path, "version: 1\nrules:\n  - &gov {name: gov, score: 0.9}\n  - {name: blog, score: -1}\n  - *gov\n"
    )
    with pytest.raises(ConfigError, match=re.escape("line 4, column 18: rules[1] ('blog').score: Input should be")):
        load_policy(path, Rules)


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read test rules .*missing\.yaml: No such file.*exists"):
        load_policy(tmp_path / "missing.yaml", Rules)
    with pytest.raises(ConfigError, match=r"cannot read test rules .*: Is a directory"):
        load_policy(tmp_path, Rules)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("version: 1\nrules:\n  - name: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin1\.yaml, line 3, column 14: not UTF-8 text \(byte 0xe9\); save"):
        load_policy(latin1, Rules)


def test_validating_data_without_a_file() -> None:
    with pytest.raises(ConfigError, match=re.escape("test rules inline: default: Input should be a valid number")):
        validate_policy({"default": "high"}, Rules, "inline")
