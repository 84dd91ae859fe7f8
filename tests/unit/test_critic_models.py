"""The critic's input validation, its exported schemas and its capability profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from core.errors import ConfigError
from core.resources import data_path
from critic.cache import cache_key, content_hash
from critic.models import BusinessIdea, CriticInput, Weights
from critic.profile import load_profile, load_profile_file
from critic.schemas import SCHEMAS, schema_text


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_shipped_schemas_match_the_models(name: str) -> None:
    shipped = data_path("critic", "schemas", name).read_text(encoding="utf-8")
    assert shipped == schema_text(SCHEMAS[name]), f"run `python -m critic.schemas` to refresh {name}"


def test_the_ideators_output_is_read_with_its_optional_fields() -> None:
    data = CriticInput.model_validate_json(data_path("critic", "examples", "ideas.json").read_text(encoding="utf-8"))
    assert len(data.ideas) == 5
    first = data.ideas[0]
    assert first.estimated_operating_profit == 1_200_000_000 and first.target_customer


@pytest.mark.parametrize(
    ("ideas", "problem"),
    [
        ([], "at least 1"),
        ([{"id": f"i{n}", "title": "t", "description": "d"} for n in range(11)], "at most 10"),
        ([{"id": "a", "title": "t", "description": "d"}] * 2, "used twice"),
        ([{"id": "a b", "title": "t", "description": "d"}], "pattern"),
        ([{"id": "a", "title": "", "description": "d"}], "at least 1 character"),
        ([{"id": "a", "title": "t", "description": "d", "estimatedRevenue": -5}], "greater than or equal"),
    ],
)
def test_bad_input_is_refused(ideas: list[dict[str, object]], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        CriticInput.model_validate({"ideas": ideas})


def test_cache_key_ignores_the_id_but_not_content_weights_model_or_samples() -> None:
    a = BusinessIdea(id="a", title="t", description="d")
    args = {"profile": "p@1", "weights": Weights(), "model": "m", "samples": 1, "temperature": 0.4}
    assert content_hash(a) == content_hash(a.model_copy(update={"id": "b"}))
    base = cache_key(a, **args)  # type: ignore[arg-type]
    assert base == cache_key(a.model_copy(update={"id": "b"}), **args)  # type: ignore[arg-type]
    for change in (
        {"profile": "p@2"},
        {"weights": Weights(market=60, synergy=40)},
        {"model": "other"},
        {"samples": 3},
        {"temperature": 0.3},
    ):
        assert cache_key(a, **{**args, **change}) != base  # type: ignore[arg-type]
    assert cache_key(a.model_copy(update={"description": "d2"}), **args) != base  # type: ignore[arg-type]


def test_profile_figures_carry_source_and_as_of_and_the_newer_outlet_count() -> None:
    profile = load_profile().base
    figures = [f for a in profile.assets for f in a.figures]
    assert all(f.source and f.as_of for f in figures)
    outlets = next(a for a in profile.assets if a.id == "outlets").figures[0]
    assert (outlets.value, outlets.spec_value, outlets.verified) == (10, 8, True)
    assert {f.label for f in figures if not f.verified} == {"延床面積", "累計供給戸数"}


def test_a_profile_whose_caps_do_not_add_up_to_fifty_is_refused_with_its_file(tmp_path: Path) -> None:
    raw = yaml.safe_load(data_path("critic", "mitsubishi_estate.yaml").read_text(encoding="utf-8"))
    raw["capabilities"][0]["cap"] = 20
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*must add up to 50"):
        load_profile_file(path)


def test_a_profile_figure_without_a_source_is_refused_with_its_line(tmp_path: Path) -> None:
    text = data_path("critic", "mitsubishi_estate.yaml").read_text(encoding="utf-8")
    path = tmp_path / "nosource.yaml"
    path.write_text(text.replace("        source: spec\n", "", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"nosource\.yaml: line \d+, column \d+: assets\[0\].*source: Field required"):
        load_profile_file(path)


def test_schemas_are_valid_json_objects() -> None:
    for name in SCHEMAS:
        assert json.loads(data_path("critic", "schemas", name).read_text(encoding="utf-8"))["type"] == "object"
