"""Reading a Server-Sent Events response in the tests, as a browser's EventSource reads it."""

from __future__ import annotations

import json
from typing import Any

import httpx


def named_events(response: httpx.Response) -> list[tuple[str, Any]]:
    """Each frame's ``event`` name and its JSON data, in order, until the server ends the stream."""
    assert response.status_code == 200, response.read().decode()
    assert response.headers["content-type"].startswith("text/event-stream")
    events: list[tuple[str, Any]] = []
    kind = "message"
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            events.append((kind, json.loads("\n".join(data))))
            kind, data = "message", []
    return events
