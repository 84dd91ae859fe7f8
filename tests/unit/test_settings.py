"""Settings in sections: file < environment < options, origins in every error, renamed keys still read."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.settings import Section, describe, env_table, load_settings, registered_sections
from nlp.settings import NlpSettings
from research.settings import RESEARCH_OPTIONS, ResearchSettings
from scrapers.settings import FetchSettings, SearchSettings


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file(tmp_path: Path) -> None:
    settings = load_settings()
    assert ResearchSettings.of(settings).agents == 3
    assert settings.llm.provider is None
    assert settings.data_dir == tmp_path / "magi-data"  # from the isolating fixture's MAGI_DATA_DIR


def test_every_layer_registers_its_section() -> None:
    sections = registered_sections()
    assert {"ray", "llm", "search", "fetch", "nlp", "research"} <= set(sections)
    assert sections["research"] is ResearchSettings and sections["fetch"] is FetchSettings


def test_precedence_file_then_env_then_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write(tmp_path / "c.yaml", "research:\n  agents: 5\nllm:\n  model: from-file\noutput_format: json\n")
    assert ResearchSettings.of(load_settings(config)).agents == 5
    monkeypatch.setenv("MAGI_RESEARCH_AGENTS", "6")
    settings = load_settings(config)
    assert ResearchSettings.of(settings).agents == 6 and settings.llm.model == "from-file"
    assert settings.output_format == "json"
    assert ResearchSettings.of(load_settings(config, {"research": {"agents": 7}})).agents == 7
    assert ResearchSettings.of(load_settings(config, {"research": {"agents": None}})).agents == 6  # not given


def test_environment_names_are_magi_section_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_SEARCH_FALLBACKS", "searxng,local")
    monkeypatch.setenv("MAGI_FETCH_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("MAGI_NLP_WORKERS", "2")
    monkeypatch.setenv("MAGI_RAY_NUM_CPUS", "1")
    settings = load_settings()
    assert SearchSettings.of(settings).fallbacks == ["searxng", "local"]
    assert FetchSettings.of(settings).allow_private is True
    assert NlpSettings.of(settings).workers == 2 and settings.ray.num_cpus == 1


def test_renamed_keys_are_still_read_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MAGI_CORPUS_DIR", str(tmp_path / "docs"))
    config = write(tmp_path / "old.yaml", "research_agents: 4\nddgs_region: us-en\n")
    with caplog.at_level(logging.WARNING):
        settings = load_settings(config)
    assert SearchSettings.of(settings).corpus_dir == tmp_path / "docs"
    assert ResearchSettings.of(settings).agents == 4 and SearchSettings.of(settings).ddgs_region == "us-en"
    warnings = " ".join(r.getMessage() for r in caplog.records)
    assert "MAGI_SEARCH_CORPUS_DIR" in warnings and "research.agents" in warnings and "search.ddgs_region" in warnings


def test_magi_config_env_and_default_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "magi.yaml", "research:\n  agents: 4\n")
    assert ResearchSettings.of(load_settings()).agents == 4
    other = write(tmp_path / "other.yaml", "research:\n  agents: 2\n")
    monkeypatch.setenv("MAGI_CONFIG", str(other))
    assert ResearchSettings.of(load_settings()).agents == 2


def test_bad_value_names_key_file_and_allowed_values(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "output_format: html\nsearch:\n  provider: bing\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    message = str(info.value)
    assert "output_format" in message and str(config) in message
    assert "'json'" in message and "'markdown'" in message
    assert "search.provider" in message and "'bing'" in message  # every problem at once


def test_bad_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_RESEARCH_AGENTS", "many")
    with pytest.raises(ConfigError, match="MAGI_RESEARCH_AGENTS"):
        load_settings()


def test_a_misspelt_variable_of_a_known_section_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_RESEARCH_AGENT", "3")
    with pytest.raises(ConfigError, match=r"MAGI_RESEARCH_AGENT names no 'research' setting.*MAGI_RESEARCH_AGENTS"):
        load_settings()


def test_unknown_keys_sections_and_secrets_in_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"research.agents_count .*unknown setting"):
        load_settings(write(tmp_path / "a.yaml", "research:\n  agents_count: 3\n"))
    with pytest.raises(ConfigError, match=r"unknown settings section.*reserch.*known sections: .*research"):
        load_settings(write(tmp_path / "s.yaml", "reserch:\n  agents: 3\n"))
    with pytest.raises(ConfigError, match="environment only"):
        load_settings(write(tmp_path / "b.yaml", "llm:\n  anthropic_api_key: sk-123\n"))
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_settings(write(tmp_path / "m.yaml", "research: 3\n"))


def test_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_settings(tmp_path)
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(write(tmp_path / "bad.yaml", "a: [1, 2\n"))
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(write(tmp_path / "list.yaml", "- 1\n- 2\n"))


def test_describe_masks_secrets_and_lists_every_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    shown = describe(load_settings())
    assert shown["llm"]["anthropic_api_key"] == "****"
    assert "sk-ant-secret" not in str(shown)
    assert {"research", "search", "fetch", "nlp", "ray", "llm", "data_dir"} <= set(shown)


def test_env_table_names_every_key() -> None:
    table = dict(env_table())
    assert table["research.agents"] == "MAGI_RESEARCH_AGENTS" and table["data_dir"] == "MAGI_DATA_DIR"
    assert table["search.corpus_dir"] == "MAGI_SEARCH_CORPUS_DIR"


def test_paths_are_made_absolute_in_the_driver_and_stay_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(overrides={"data_dir": Path("rel-data"), "search": {"corpus_dir": Path("docs")}})
    assert settings.data_dir == tmp_path / "rel-data"
    assert SearchSettings.of(settings).corpus_dir == tmp_path / "docs"
    monkeypatch.chdir(tmp_path / "..")  # a copy made elsewhere (a Serve replica) keeps the driver's paths
    again = settings.updated({"research": {"agents": 2}})
    assert again.data_dir == tmp_path / "rel-data" and SearchSettings.of(again).corpus_dir == tmp_path / "docs"


def test_settings_cross_processes_with_their_sections() -> None:
    settings = load_settings(overrides={"research": {"agents": 5}})
    again = pickle.loads(pickle.dumps(settings))
    assert ResearchSettings.of(again).agents == 5 and again.data_dir == settings.data_dir


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("iterations", 0),
        ("iterations", 11),
        ("agents", 0),
        ("agent_timeout_s", 0),
        ("conflict_threshold", 1.5),
        ("results_per_agent", 0),
    ],
)
def test_research_config_is_validated(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"research.{key}"):
        load_settings(overrides={"research": {key: value}})


def test_options_map_onto_settings_once_and_errors_name_the_option(tmp_path: Path) -> None:
    given = RESEARCH_OPTIONS.from_keywords({"agent_count": 2, "iteration_count": 1, "timeout": 30, "corpus": tmp_path})
    settings = RESEARCH_OPTIONS.apply(load_settings(), given)
    research = ResearchSettings.of(settings)
    assert (research.agents, research.iterations, research.agent_timeout_s) == (2, 1, 30)
    assert SearchSettings.of(settings).provider == "local" and SearchSettings.of(settings).corpus_dir == tmp_path
    with pytest.raises(ConfigError, match=r"research.agents from argument 'agent_count'.*less than or equal to 16"):
        RESEARCH_OPTIONS.apply(load_settings(), RESEARCH_OPTIONS.from_keywords({"agent_count": 40}))


def test_the_council_section_was_magi_and_its_old_names_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from magi.settings import CouncilSettings

    config = write(tmp_path / "old.yaml", "magi:\n  rounds: 3\n  threshold: unanimous\n")
    monkeypatch.setenv("MAGI_MAGI_QUORUM", "3")
    with caplog.at_level(logging.WARNING):
        council = CouncilSettings.of(load_settings(config))
    assert (council.rounds, council.threshold, council.quorum) == (3, "unanimous", 3)
    warnings = " ".join(r.getMessage() for r in caplog.records)
    assert "MAGI_MAGI_QUORUM is now MAGI_COUNCIL_QUORUM" in warnings and "'magi' is now 'council'" in warnings
    monkeypatch.setenv("MAGI_COUNCIL_QUORUM", "2")  # the new name wins over the old one
    assert CouncilSettings.of(load_settings(config)).quorum == 2
    monkeypatch.setenv("MAGI_MAGI_ROUNDZ", "1")
    with pytest.raises(ConfigError, match="MAGI_MAGI_ROUNDZ names no 'council' setting"):
        load_settings()
    monkeypatch.delenv("MAGI_MAGI_ROUNDZ")
    monkeypatch.setenv("MAGI_MAGI_QUORUM", "4")
    with pytest.raises(ConfigError, match=r"council.quorum from environment variable MAGI_MAGI_QUORUM"):
        monkeypatch.delenv("MAGI_COUNCIL_QUORUM")
        load_settings()


class LateSection(Section):
    """A section no entry point registers (e.g. code run from a checkout that was never installed)."""

    name = "late"
    size: int = 1


def test_an_unregistered_section_still_reads_its_defaults() -> None:
    assert LateSection.of(load_settings()).size == 1
