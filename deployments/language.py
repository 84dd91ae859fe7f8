"""The language an HTTP caller reads: from ``Accept-Language``, Japanese unless English comes first.

Refusals the apps write themselves come from the ``serve`` message catalogue
(``data/serve/messages.yaml``, core/messages.py) in that language: :func:`say`.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.messages import Lang, catalogue

CATALOGUE = "serve"
ACCEPT_LANGUAGE = b"accept-language"


def preferred_language(accept_language: str | bytes | None, default: Lang = "ja") -> Lang:
    """The first of ja/en in an ``Accept-Language`` value by weight (order breaks ties); ``default``
    when it names neither or cannot be read."""
    if isinstance(accept_language, bytes):
        accept_language = accept_language.decode("latin-1")
    best: tuple[float, int, Lang] | None = None
    for position, part in enumerate((accept_language or "").split(",")[:32]):
        tag, _, params = part.strip().partition(";")
        primary = tag.strip().lower().split("-")[0]
        if primary not in ("ja", "en"):
            continue
        weight = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        lang: Lang = "ja" if primary == "ja" else "en"
        if weight > 0 and (best is None or (weight, -position) > (best[0], best[1])):
            best = (weight, -position, lang)
    return best[2] if best else default


def language_of_headers(headers: Iterable[tuple[bytes, bytes]]) -> Lang:
    """The caller's language from raw ASGI headers."""
    for name, value in headers:
        if name.lower() == ACCEPT_LANGUAGE:
            return preferred_language(value)
    return "ja"


def say(key: str, lang: Lang, **fields: object) -> str:
    """Message ``key`` of the serve catalogue in ``lang``."""
    return catalogue(CATALOGUE).text(key, lang, **fields)


__all__ = ["ACCEPT_LANGUAGE", "CATALOGUE", "language_of_headers", "preferred_language", "say"]
