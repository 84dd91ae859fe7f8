"""Session ids and owners: what a caller may name a session, and whose it is.

An id is 1-128 characters of ASCII letters, digits, ``_``, ``-`` and ``.``, starting with a letter
or digit: safe in URLs, actor names, logs and file names. A session belongs to the client that
created it, known by a fingerprint of its API key (SHA-256, never the key itself); without API keys
every caller is the same local client. Another client is told the session does not exist.

The id a caller names is only its own name for the session: a session is stored and hosted under
:func:`session_key` of (system, owner, id), so two clients or two systems using the same id never
meet (one cannot read, delete or squat another's), and no caller's id appears in actor names,
metric labels or artifact paths.
"""

from __future__ import annotations

import hashlib
import re

from core.errors import InputError, MagiError

MAX_ID_CHARS = 128
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
LOCAL_OWNER = ""


class SessionNotFoundError(MagiError):
    """No session by that id for this client (missing, or another client's: the same answer)."""

    exit_code = 2


class TooManySessionsError(MagiError):
    """A client asked for a new session while holding as many live ones as it may (HTTP 429)."""

    exit_code = 2


def validate_session_id(value: object, what: str = "sessionId") -> str:
    if not isinstance(value, str):
        raise InputError(f"{what} must be text, got {type(value).__name__}")
    if not ID_PATTERN.fullmatch(value):
        shown = value[:40].encode("ascii", "backslashreplace").decode()
        raise InputError(
            f"{what} {shown!r} is not a session id: use 1-{MAX_ID_CHARS} characters of letters, digits, "
            "'_', '-' and '.', starting with a letter or digit"
        )
    return value


def session_key(system: str, owner: str, session_id: str) -> str:
    """The key session ``session_id`` of ``owner`` in ``system`` is stored and hosted under: the system
    and a digest, itself a valid session id (``router-3f2a...``)."""
    digest = hashlib.sha256(f"{system}\0{owner}\0{session_id}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{system}-{digest[:40]}"


def owner_of(api_key: str | None) -> str:
    """The owner fingerprint of a client presenting ``api_key`` (None: the local, keyless client)."""
    if not api_key:
        return LOCAL_OWNER
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


__all__ = [
    "ID_PATTERN",
    "LOCAL_OWNER",
    "MAX_ID_CHARS",
    "SessionNotFoundError",
    "TooManySessionsError",
    "owner_of",
    "session_key",
    "validate_session_id",
]
