"""robots.txt rules for one origin, following RFC 9309 for what an unavailable file means.

The fetcher downloads ``/robots.txt`` once per origin; this module only turns the outcome into rules:

* 2xx: parse it (the first ``max_bytes``; RFC 9309 asks crawlers to parse at least 500 KiB);
* 4xx other than 429: "unavailable", so everything is allowed;
* 429, 5xx, a network error or a timeout: "unreachable", so everything is disallowed for this
  fetcher's lifetime (RFC 9309 §2.3.1.4; 429 is counted with them because it says "slow down",
  not "there is no file").

Matching uses :mod:`urllib.robotparser` with our product token. Its known difference from the RFC:
the first matching rule of a group wins instead of the longest one.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.robotparser import RobotFileParser


@dataclass(frozen=True)
class RobotsRules:
    """What one origin's robots.txt lets us fetch; ``reason`` says why it is all-or-nothing ("" if parsed)."""

    parser: RobotFileParser | None = None
    allow_all: bool = False
    reason: str = ""

    def allows(self, url: str, user_agent: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return self.parser.can_fetch(user_agent, url)


def rules_from_status(status: int, body: bytes) -> RobotsRules:
    """Rules from the final response to ``GET /robots.txt`` (after redirects)."""
    if 200 <= status < 300:
        parser = RobotFileParser()
        parser.parse(body.decode("utf-8", errors="replace").splitlines())
        return RobotsRules(parser=parser)
    if 400 <= status < 500 and status != 429:
        return RobotsRules(allow_all=True, reason=f"unavailable (HTTP {status})")
    return RobotsRules(allow_all=False, reason=f"unreachable (HTTP {status})")


def unreachable(why: str) -> RobotsRules:
    """Rules when robots.txt could not be fetched at all: disallow everything."""
    return RobotsRules(allow_all=False, reason=f"unreachable ({why})")


def product_token(user_agent: str) -> str:
    """``"MAGI-Cluster-Research/0.1 (...)"`` -> ``"MAGI-Cluster-Research"``, the name robots.txt groups use."""
    return user_agent.split("/", 1)[0].strip()


__all__ = [
    "RobotsRules",
    "product_token",
    "rules_from_status",
    "unreachable",
]
