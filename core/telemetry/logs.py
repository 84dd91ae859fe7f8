"""One logging set-up for the CLI, Serve replicas, actors and batch jobs.

``logging.format: text`` (the default) writes ``time level logger [request id]: message`` lines;
``json`` writes one JSON object per line with ``time``, ``level``, ``logger``, ``requestId``,
``system``, ``node`` and ``message`` (plus ``traceId`` and ``exception`` when there are), for a log
collector. Every line, in either format, passes :func:`scrubbed` first: the API keys and tokens this
process knows of, and anything shaped like one, never reach a log.

A process configures itself with :func:`setup_logging`; an actor configures itself on its first call
from the format its caller carried (core/telemetry/context.py), so a cluster's workers log as the
command or app that started the work does. A Serve replica keeps Serve's handlers (its log file, its
level, ``serve.access_log``) and gets this formatter on them (deployments/base.py).
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import time
from typing import IO, Any, Literal

from core.telemetry.scrub import REDACTED, SECRET_ENV, forget_known_secrets, scrubbed

LogFormat = Literal["text", "json"]
MAX_ID_CHARS = 128  # a request id longer than this is cut in a log line (core/telemetry/request_id.py)
_state: dict[str, Any] = {"format": None, "level": None, "node": None}


def node_name() -> str:
    """The Ray node id of this process when it is in Ray, else the host name (read once)."""
    if _state["node"] is None:
        ray = sys.modules.get("ray")
        node = None
        if ray is not None and ray.is_initialized():
            try:
                node = ray.get_runtime_context().get_node_id()
            except Exception:  # not connected after all: the host name will do
                node = None
        _state["node"] = node or socket.gethostname()
    found: str = _state["node"]
    return found


def system_of(logger: str) -> str:
    """The part a logger belongs to: its top package (``research.engine`` -> ``research``)."""
    return logger.split(".", 1)[0] or "root"


class ContextFilter(logging.Filter):
    """Puts the request id, trace id, system and node on every record, and scrubs its message, for any
    formatter (this project's, or Serve's own in a replica)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrubbed(record.getMessage()), None
        from core.telemetry.request_id import current_request_id
        from core.telemetry.tracing import current_trace_id

        given = getattr(record, "request_id", None) or current_request_id() or _serve_request_id() or ""
        # Serve's own lines carry the id a client sent: never a secret, never a page of text
        record.request_id = scrubbed(str(given))[:MAX_ID_CHARS]
        record.trace_id = current_trace_id() or ""
        record.system = system_of(record.name)
        record.node = node_name()
        return True


def _serve_request_id() -> str | None:
    """The id Ray Serve gave the request being served (it honours X-Request-ID), in a replica."""
    if "ray.serve" not in sys.modules:
        return None
    try:
        from ray.serve.context import _get_serve_request_context

        return _get_serve_request_context().request_id or None
    except Exception:  # an older or newer Serve without that context: no id rather than no line
        return None


class JsonFormatter(logging.Formatter):
    """One JSON object per line (see the module's docstring for the keys)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "requestId": getattr(record, "request_id", "") or None,
            "system": getattr(record, "system", system_of(record.name)),
            "node": getattr(record, "node", None) or node_name(),
            "message": scrubbed(record.getMessage()),
        }
        for extra in ("trace_id", "application", "deployment", "replica"):
            value = getattr(record, extra, None)
            if value:
                line["traceId" if extra == "trace_id" else extra] = str(value)
        if record.exc_info:
            line["exception"] = scrubbed(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time level logger [request id]: message``, scrubbed."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(rid)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        rid = getattr(record, "request_id", "")
        record.rid = f" [{rid}]" if rid else ""
        return scrubbed(super().format(record))


def formatter(fmt: LogFormat) -> logging.Formatter:
    return JsonFormatter() if fmt == "json" else TextFormatter()


def dress(handler: logging.Handler, fmt: LogFormat) -> None:
    """Give ``handler`` this project's format and context (once)."""
    handler.setFormatter(formatter(fmt))
    if not any(isinstance(f, ContextFilter) for f in handler.filters):
        handler.addFilter(ContextFilter())


def setup_logging(level: int | str = logging.INFO, fmt: LogFormat = "text", stream: IO[str] | None = None) -> None:
    """Configure this process's root logger: one handler on ``stream`` (stderr) in ``fmt`` at ``level``.
    Called again, it replaces its own handler (a CLI test runs many commands in one process)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_magi", False)]:
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler._magi = True  # type: ignore[attr-defined]
    dress(handler, fmt)
    root.addHandler(handler)
    root.setLevel(level)
    _state["format"], _state["level"] = fmt, logging.getLevelName(root.level)


def logging_choice() -> dict[str, str] | None:
    """The format and level this process logs with, for the actors it calls (None: never set up)."""
    if _state["format"] is None:
        return None
    return {"format": _state["format"], "level": _state["level"]}


def adopt_logging(choice: dict[str, str] | None) -> None:
    """In an actor: log as the caller does, set up once (a worker's root logger is the project's)."""
    if not choice or _state["format"] is not None:
        return
    fmt: LogFormat = "json" if choice.get("format") == "json" else "text"
    setup_logging(choice.get("level", "INFO"), fmt)


def dress_handlers(handlers: list[logging.Handler], fmt: LogFormat, level: int) -> None:
    """Serve's replica handlers keep Serve's format (its JSON names the keys ``asctime``, ``levelname``,
    ``name``, ``request_id``); they get the context (``system``, ``node``, ``trace_id``) and the
    scrubbing. Actors the replica calls log in ``fmt``."""
    for handler in handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
    _state["format"], _state["level"] = fmt, logging.getLevelName(level)


__all__ = [
    "REDACTED",
    "SECRET_ENV",
    "ContextFilter",
    "JsonFormatter",
    "LogFormat",
    "TextFormatter",
    "adopt_logging",
    "dress",
    "dress_handlers",
    "forget_known_secrets",
    "formatter",
    "logging_choice",
    "node_name",
    "scrubbed",
    "setup_logging",
    "system_of",
]
