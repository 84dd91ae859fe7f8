"""The pages' label catalogue (data/pages/labels.yaml): complete in both languages, and every label a
page names exists, so no page ever shows a raw key."""

from __future__ import annotations

import re

import pytest

from core.errors import ConfigError
from core.policy import validate_policy
from deployments.pages import LANGUAGES, PageCatalogue, asset_names, catalogue, labels_json, pages_dir

# t("key"), t("key", {...}), data-t="key", data-t-placeholder="key", data-t-aria="key", data-t-title="key"
NAMED = re.compile(r"""\bt\(\s*"([a-z_]+\.[A-Za-z_]+)"\s*[,)]|data-t(?:-[a-z]+)?="([a-z_]+\.[A-Za-z_]+)\"""")
# keys built from a prefix and a value: t("verdict." + v), t("critic.status_" + s) ...
BUILT = re.compile(r"""\bt\(\s*"([a-z_]+\.[A-Za-z_]*)"\s*\+""")


def test_every_label_has_japanese_and_english() -> None:
    found = catalogue()
    assert found.labels and all(set(texts) == set(LANGUAGES) for texts in found.labels.values())
    by_language = found.by_language()
    assert by_language["ja"].keys() == by_language["en"].keys()


def test_every_label_a_page_names_is_in_the_catalogue() -> None:
    labels = catalogue().labels
    files = [p for p in pages_dir().iterdir() if p.suffix in (".js", ".html")]
    assert {p.name for p in files} >= {"council.js", "critic.js", "cafe.js", "home.js", "research.js", "page.js"}
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in NAMED.finditer(text):
            key = match.group(1) or match.group(2)
            assert key in labels, f"{path.name} names the label {key!r}, which labels.yaml lacks"
        for prefix in BUILT.findall(text):
            assert any(k.startswith(prefix) for k in labels), f"{path.name}: no label starts with {prefix!r}"


def test_values_the_pages_look_up_by_name_have_labels() -> None:
    labels = catalogue().labels
    for key in ("APPROVE", "DENY", "CONDITIONAL", "NO_DECISION", "SPLIT"):
        assert f"verdict.{key}" in labels
    for status in ("queued", "judging", "ok", "cached", "failed", "timeout"):
        assert f"critic.status_{status}" in labels
    from router.models import AGENT_NAMES

    assert all(f"agent.{name}" in labels for name in AGENT_NAMES)
    for system in catalogue().systems:
        assert f"system.{system.app}" in labels and f"system_what.{system.app}" in labels


def test_a_label_missing_a_language_is_refused_naming_it() -> None:
    raw = {"version": 1, "systems": [{"app": "magi", "page": ""}], "labels": {"x.y": {"ja": "はい"}}}
    with pytest.raises(ConfigError, match=r"x\.y"):
        validate_policy(raw, PageCatalogue, "labels.yaml")


def test_the_served_catalogue_carries_each_systems_route_prefix() -> None:
    import json

    body = json.loads(labels_json())
    assert {s["app"]: s["prefix"] for s in body["systems"]}["critic"] == "/critic"
    assert "page.css" in asset_names() and "labels.yaml" not in asset_names()


def test_every_conflict_type_has_a_label() -> None:
    from nlp.conflicts import ConflictType

    labels = catalogue().labels
    assert all(f"research.dispute_{kind}" in labels for kind in ConflictType.__args__)  # type: ignore[attr-defined]
