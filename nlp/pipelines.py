"""The spaCy pipelines behind entity extraction, loaded once per process and shared between threads.

* ``ja``: GiNZA (``spacy.load("ja_ginza")``).
* ``en``: ``en_core_web_sm`` when installed, else ``spacy.blank("en")``; either way an
  ``entity_ruler`` built from ``data/rules/en_entity_patterns.yaml`` runs before any statistical
  ``ner`` so that money, percentages and dates come from the rules.

Loading takes seconds, so it happens lazily under a lock. Using a pipeline is serialised too:
SudachiPy's tokenizer raises ``RuntimeError: Already borrowed`` when two threads call it at once.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, StringConstraints

if TYPE_CHECKING:  # spaCy is imported where a model is loaded: processes that only handle results stay light
    from spacy.language import Language

from core.errors import ConfigError, MagiError
from core.policy import PolicyModel, load_policy
from core.resources import data_path
from nlp.labels import LABELS

EN_RULES_PATH = data_path("rules", "en_entity_patterns.yaml")
JA_MODEL = "ja_ginza"
EN_MODEL = "en_core_web_sm"
JA_INSTALL = "pip install 'ginza>=5.3,<5.4' 'ja-ginza>=5.3,<5.4'"
EN_INSTALL = "python -m spacy download en_core_web_sm"
# Components entity extraction needs; the others (parser, morphologizer, ...) are skipped per call.
NER_COMPONENTS = frozenset({"tok2vec", "transformer", "entity_ruler", "ner"})

_load_lock = threading.Lock()
_pipelines: dict[str, Language] = {}
_use_locks: dict[str, threading.Lock] = {"ja": threading.Lock(), "en": threading.Lock()}


class ModelUnavailableError(MagiError):
    """An NLP model is not installed or cannot be loaded; the message names the install command."""


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def ginza_available() -> tuple[bool, str]:
    """Whether GiNZA looks installed (without loading it), and a message with the fix when not."""
    import spacy

    missing = [d for d in ("ginza", "ja-ginza", "sudachipy", "sudachidict-core") if _version(d) is None]
    if missing or not spacy.util.is_package(JA_MODEL):
        return False, f"GiNZA is missing ({', '.join(missing) or JA_MODEL}); install it with: {JA_INSTALL}"
    return True, f"ja_ginza {_version('ja-ginza')} (ginza {_version('ginza')}, sudachipy {_version('sudachipy')})"


def ner_backend(lang: str) -> str:
    """Which model serves ``lang`` (for ``magi doctor``); never loads a model."""
    import spacy

    if lang == "ja":
        ok, message = ginza_available()
        return f"GiNZA {message}" if ok else f"unavailable: {message}"
    if lang == "en":
        if spacy.util.is_package(EN_MODEL):
            return f"{EN_MODEL} {_version(EN_MODEL) or '?'} + entity_ruler ({EN_RULES_PATH.name})"
        return f"spacy.blank('en') + entity_ruler ({EN_RULES_PATH.name}); install {EN_MODEL} for more"
    return "none (no entity extraction for this language)"


def loaded_pipelines() -> list[str]:
    """Languages whose pipeline this process has loaded (a warm run that found every analysis cached loads none)."""
    return sorted(_pipelines)


def load_pipeline(lang: str) -> Language:
    """The process-wide pipeline for ``ja`` or ``en``, loaded on first use."""
    nlp = _pipelines.get(lang)
    if nlp is not None:
        return nlp
    with _load_lock:
        if lang not in _pipelines:
            if lang == "ja":
                _pipelines[lang] = _load_japanese()
            elif lang == "en":
                _pipelines[lang] = _load_english()
            else:
                raise ValueError(f"no pipeline for language {lang!r}")
        return _pipelines[lang]


@contextmanager
def using(lang: str) -> Iterator[Language]:
    """Hold ``lang``'s pipeline exclusively (see the module docstring for why)."""
    nlp = load_pipeline(lang)
    with _use_locks[lang]:
        yield nlp


def skipped_components(nlp: Language) -> list[str]:
    """Components that entity extraction does not need (GiNZA runs about 10% faster without them)."""
    return [name for name in nlp.pipe_names if name not in NER_COMPONENTS]


def _load_japanese() -> Language:
    import spacy

    try:
        return spacy.load(JA_MODEL)
    except Exception as exc:  # OSError when missing, ImportError/ValueError when broken
        raise ModelUnavailableError(
            f"cannot load the Japanese NER model {JA_MODEL!r} ({type(exc).__name__}: {exc}); "
            f"install it with: {JA_INSTALL}"
        ) from exc


def _load_english() -> Language:
    import spacy

    if not spacy.util.is_package(EN_MODEL):
        return add_entity_ruler(spacy.blank("en"))
    try:
        nlp = spacy.load(EN_MODEL)
    except Exception as exc:
        raise ModelUnavailableError(
            f"{EN_MODEL} is installed but cannot be loaded ({type(exc).__name__}: {exc}); "
            f"reinstall it with: {EN_INSTALL}, or uninstall it to use the rule-based English pipeline"
        ) from exc
    return add_entity_ruler(nlp)


def add_entity_ruler(nlp: Language, rules_path: Path = EN_RULES_PATH) -> Language:
    """Add the English rules, before ``ner`` when there is one so that the model keeps the rule spans."""
    where: dict[str, Any] = {"before": "ner"} if "ner" in nlp.pipe_names else {}
    ruler = nlp.add_pipe("entity_ruler", config={"validate": True}, **where)
    try:
        ruler.add_patterns(load_en_patterns(rules_path))  # type: ignore[attr-defined]
    except ConfigError:
        raise
    except Exception as exc:  # spaCy's MatchPatternError and friends
        raise ConfigError(f"invalid entity pattern in {rules_path}: {exc}") from exc
    return nlp


def _known_label(label: str) -> str:
    if label not in LABELS:
        raise ValueError(f"label {label!r} is not one of {sorted(LABELS)}")
    return label


Label = Annotated[str, AfterValidator(_known_label)]


class EntityRulesFile(PolicyModel):
    """The shape of ``en_entity_patterns.yaml``; spaCy checks the token patterns themselves."""

    policy_name: ClassVar[str] = "entity rules"

    tokens: dict[str, Any] = Field(default_factory=dict)  # only a home for the YAML anchors used below
    patterns: dict[Label, list[list[dict[str, Any]]]] = Field(default_factory=dict)
    gazetteer: dict[Label, list[Annotated[str, StringConstraints(min_length=1)]]] = Field(default_factory=dict)


def load_en_patterns(path: Path = EN_RULES_PATH) -> list[dict[str, Any]]:
    """Turn the YAML rule file into EntityRuler patterns (see the file's header for its layout)."""
    rules = load_policy(path, EntityRulesFile)
    patterns: list[dict[str, Any]] = []
    for section in (rules.patterns, rules.gazetteer):
        for label, items in section.items():
            patterns.extend({"label": label, "pattern": item} for item in items)
    return patterns


__all__ = [
    "EN_INSTALL",
    "EN_MODEL",
    "EN_RULES_PATH",
    "JA_INSTALL",
    "JA_MODEL",
    "NER_COMPONENTS",
    "EntityRulesFile",
    "Label",
    "ModelUnavailableError",
    "add_entity_ruler",
    "ginza_available",
    "load_en_patterns",
    "load_pipeline",
    "loaded_pipelines",
    "ner_backend",
    "skipped_components",
    "using",
]
