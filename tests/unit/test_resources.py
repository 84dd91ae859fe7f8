"""core.resources: bundled files as real paths, and a clear error when one is missing."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.resources import data_path, resource_path
from core.settings import load_settings
from scrapers.settings import SearchSettings


def test_bundled_data_is_a_real_folder() -> None:
    corpus = data_path("corpus")
    assert corpus.is_dir() and (corpus / "manifest.yaml").is_file()
    assert corpus == SearchSettings.of(load_settings()).corpus_dir  # the default corpus
    assert data_path("rules", "query_glossary.yaml").read_text(encoding="utf-8").count("version: 1") == 1


def test_a_missing_resource_names_it_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"resource data/rules/nope\.yaml is missing .*reinstall magi-cluster"):
        data_path("rules", "nope.yaml")
    with pytest.raises(ConfigError, match=r"package 'no_such_package' is not installed; reinstall"):
        resource_path("no_such_package", "x.yaml")
