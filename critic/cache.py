"""Cache keys: the same idea judged the same way gives the same stored evaluation, without an LLM call.

The key covers everything that changes an evaluation: the idea's content (every field but its id:
the same idea under another id is the same idea), the profile and industry with their versions,
the weights, the model, the samples, the temperature and :data:`SCORING_VERSION` (raise it when
the arithmetic in :mod:`critic.scoring` changes, so old evaluations are not served).
"""

from __future__ import annotations

import hashlib
import json

from critic.models import BusinessIdea, Weights

SCORING_VERSION = 2  # 2: one rounding rule, the median judgement, the weighted parts


def content_hash(idea: BusinessIdea) -> str:
    """SHA-256 of the idea's fields (id left out), in a canonical JSON form."""
    fields = idea.model_dump(mode="json", exclude={"id"}, exclude_none=True)
    canonical = json.dumps(fields, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def cache_key(
    idea: BusinessIdea, *, profile: str, weights: Weights, model: str, samples: int, temperature: float
) -> str:
    parts = {
        "content": content_hash(idea),
        "profile": profile,
        "weights": [weights.market, weights.synergy],
        "model": model,
        "samples": samples,
        "temperature": temperature,
        "scoring": SCORING_VERSION,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


__all__ = ["SCORING_VERSION", "cache_key", "content_hash"]
