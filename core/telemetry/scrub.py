"""Secrets out of text: the API keys and tokens this process knows of, and anything shaped like one.

Used by every log line (core/telemetry/logs.py) and by the request ids a client may send
(core/telemetry/request_id.py): a key sent as an id must not reach a log either.
"""

from __future__ import annotations

import os
import re

SECRET_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MAGI_API_KEYS", "RAY_AUTH_TOKEN")
REDACTED = "[redacted]"
# Shapes of credentials: provider keys (sk-..., sk-ant-...), bearer tokens, passwords in URLs.
_SHAPES = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{8,}"),
    re.compile(r"(?i)(x-api-key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{8,}"),
    re.compile(r"(://[^:/@\s]+:)[^@/\s]+(@)"),
)
_secrets: dict[str, tuple[str, ...] | None] = {"known": None}


def _known_secrets() -> tuple[str, ...]:
    """The secret values in this process's environment (read once; MAGI_API_KEYS is a list)."""
    if _secrets["known"] is None:
        values: list[str] = []
        for name in SECRET_ENV:
            raw = os.environ.get(name, "")
            values.extend(v.strip() for v in raw.split(",") if len(v.strip()) >= 6)
        _secrets["known"] = tuple(sorted(set(values), key=len, reverse=True))
    found: tuple[str, ...] = _secrets["known"] or ()
    return found


def forget_known_secrets() -> None:
    """Read the environment's secrets again on the next line (tests that set them)."""
    _secrets["known"] = None


def scrubbed(text: str) -> str:
    """``text`` with every known secret and credential-shaped token replaced by ``[redacted]``."""
    for secret in _known_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    for shape in _SHAPES:
        if shape.groups == 0:
            text = shape.sub(REDACTED, text)
        elif shape.groups == 1:
            text = shape.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = shape.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return text


__all__ = ["REDACTED", "SECRET_ENV", "forget_known_secrets", "scrubbed"]
