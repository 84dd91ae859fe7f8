from pathlib import Path

import pytest

from core.errors import ConfigError
from core.settings import describe, load_settings


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.research_agents == 3
    assert settings.llm.provider is None
    assert settings.data_dir == tmp_path / "magi-data"  # from the isolating fixture's MAGI_DATA_DIR


def test_precedence_file_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write(tmp_path / "c.yaml", "research_agents: 5\nllm_model: from-file\noutput_format: json\n")
    assert load_settings(config).research_agents == 5
    monkeypatch.setenv("MAGI_RESEARCH_AGENTS", "6")
    settings = load_settings(config)
    assert settings.research_agents == 6 and settings.llm.model == "from-file"
    assert load_settings(config, research_agents=7).research_agents == 7
    assert load_settings(config, research_agents=None).research_agents == 6  # flag not given


def test_magi_config_env_and_default_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "magi.yaml", "research_agents: 4\n")
    assert load_settings().research_agents == 4
    other = write(tmp_path / "other.yaml", "research_agents: 2\n")
    monkeypatch.setenv("MAGI_CONFIG", str(other))
    assert load_settings().research_agents == 2


def test_bad_value_names_key_file_and_allowed_values(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "output_format: html\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    message = str(info.value)
    assert "output_format" in message and str(config) in message
    assert "'json'" in message and "'markdown'" in message


def test_bad_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_RESEARCH_AGENTS", "many")
    with pytest.raises(ConfigError, match="MAGI_RESEARCH_AGENTS"):
        load_settings()


def test_unknown_key_and_secrets_in_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown setting.*agents_count"):
        load_settings(write(tmp_path / "a.yaml", "agents_count: 3\n"))
    with pytest.raises(ConfigError, match="environment only"):
        load_settings(write(tmp_path / "b.yaml", "anthropic_api_key: sk-123\n"))


def test_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(write(tmp_path / "bad.yaml", "a: [1, 2\n"))
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(write(tmp_path / "list.yaml", "- 1\n- 2\n"))


def test_describe_masks_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    shown = describe(load_settings())
    assert shown["anthropic_api_key"] == "****"
    assert "sk-ant-secret" not in str(shown)


def test_paths_are_made_absolute_in_the_driver(tmp_path: Path) -> None:
    settings = load_settings(data_dir=Path("rel-data"), corpus_dir=Path("docs"))
    assert settings.data_dir == tmp_path / "rel-data" and settings.corpus_dir == tmp_path / "docs"


@pytest.mark.parametrize(("key", "value"), [
    ("research_iterations", 0), ("research_iterations", 11), ("research_agents", 0),
    ("research_agent_timeout_s", 0), ("research_conflict_threshold", 1.5), ("research_results_per_agent", 0),
])
def test_research_config_is_validated(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=key):
        load_settings(**{key: value})
