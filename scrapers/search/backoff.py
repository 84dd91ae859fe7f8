"""Retry delays shared by the web providers: exponential, capped, with jitter.

Jitter keeps parallel agents that failed together from retrying in lockstep against the same
rate limiter.
"""

from __future__ import annotations

import random


def backoff_delay(attempt: int, base_s: float, max_s: float) -> float:
    """Pause before retry number ``attempt`` (1-based): ``base * 2**(attempt-1)``, capped, times 0.5-1.0."""
    return min(max_s, base_s * 2.0 ** (attempt - 1)) * random.uniform(0.5, 1.0)

__all__ = [
    "backoff_delay",
]
