"""Cross-language search queries from a small glossary (``data/rules/query_glossary.yaml``).

No translation model runs offline, so an agent that should also read sources in the other language
builds that query from the glossary: every entry the text mentions contributes its words in the other
language. Topics the glossary does not cover get no cross-language query (``None``) rather than a bad one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.resources import data_path
from core.yamlfile import read_yaml
from nlp.values import fold

GLOSSARY_PATH = data_path("rules", "query_glossary.yaml")


@dataclass(frozen=True)
class Term:
    ja: tuple[str, ...]
    en: str


def parse_glossary(raw: Any, file: str = GLOSSARY_PATH.name) -> tuple[Term, ...]:
    if not isinstance(raw, dict) or not isinstance(raw.get("terms"), list):
        raise ConfigError(f"query glossary {file} must be a mapping with a 'terms' list")
    terms = []
    for i, entry in enumerate(raw["terms"]):
        ja, en = (entry.get("ja"), entry.get("en")) if isinstance(entry, dict) else (None, None)
        if not (isinstance(ja, list) and ja and all(isinstance(j, str) and j for j in ja)
                and isinstance(en, str) and en.strip()):
            raise ConfigError(f"query glossary {file}: terms[{i}] needs 'ja' (a list of words) and 'en' (words)")
        terms.append(Term(tuple(fold(j) for j in ja), en.strip()))
    return tuple(terms)


@cache
def load_glossary(path: Path = GLOSSARY_PATH) -> tuple[Term, ...]:
    return parse_glossary(read_yaml(path, "query glossary"), str(path))


def cross_language_query(text: str, lang: str, glossary: tuple[Term, ...] | None = None) -> str | None:
    """The text's glossary terms in the other language (``lang`` is the text's: ja or en), or None."""
    terms = glossary if glossary is not None else load_glossary()
    folded = fold(text).lower()
    if lang == "ja":
        words = [t.en for t in terms if any(j in folded for j in t.ja)]
    else:
        words = [t.ja[0] for t in terms if any(w.lower() in folded for w in t.en.split() if len(w) > 3)]
    return " ".join(dict.fromkeys(words)) or None
