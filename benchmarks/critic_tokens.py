"""Tokens of one critic judgement, counted by a real tokenizer, and the budget they call for (prints JSON).

For every idea of the sample set (or IDEAS.json): the judge's prompt as it is sent (system prompt,
the fenced idea and the output schema the provider receives), and a full-length answer (every text
field at the prompt's 200-character limit, every list full). Counted by llama.cpp's tokenizer of
the bundled model (the ``llm`` app's provider; its ``/tokenize`` endpoint) when llama.cpp is
installed, and always by the character estimate the critic's scripted judge uses, side by side.
``recommended`` is what ``critic.max_tokens`` and ``critic.token_budget`` should be so that a full
answer is never cut: the longest answer plus a quarter, and the longest prompt plus that.

    .venv/bin/python benchmarks/critic_tokens.py [IDEAS.json]
"""

from __future__ import annotations

import json
import math
import sys
import urllib.request
from pathlib import Path
from typing import Any

from core.messages import language_of
from core.resources import data_path
from core.settings import load_settings
from critic.engine import preflight
from critic.models import CriticInput, IdeaJudgement
from critic.prompt import LANGUAGE_WORDS, messages_for, system_prompt

TEXT_LIMIT = 200  # characters per text field, as the prompt asks
HEADROOM = 1.25


def estimate(text: str) -> int:
    """The scripted judge's count: Japanese ~2 characters a token, JSON ~4."""
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return (len(text) - ascii_chars + 1) // 2 + (ascii_chars + 3) // 4


def full_answer() -> dict[str, Any]:
    """The longest answer the prompt allows: every text at its limit, every list full."""
    text = ("市場規模と成長性の根拠として推定売上と市場調査の数字を確認した。" * 8)[:TEXT_LIMIT]
    return {
        "market": {"reasoning": text, "size": 18.5, "growth": 12.5, "profitability": 11.5},
        "capabilities": {
            "required": ["development", "operations", "finance", "innovation"],
            "reasoning": text,
            "development": 13.5,
            "operations": 11.5,
            "finance": 10.5,
            "innovation": 7.5,
        },
        "scenario": {
            "story": text,
            "assets": ["marunouchi", "tenants", "group", "outlets", "residents"],
            "resourceUse": 8.5,
            "brand": 7.5,
            "strategicValue": 8.5,
        },
        "verification": {
            "reasoning": text,
            "hardToCopy": text,
            "logic": 4.5,
            "feasibility": 3.5,
            "uniqueness": 4.5,
            "scale": 4.5,
        },
        "reasons": [text, text, text],
    }


class LlamaTokenizer:
    """The bundled model's tokenizer, through llama.cpp's HTTP endpoint in this process."""

    def __init__(self) -> None:
        from core.llm.local_model import LocalModel, ModelConfig

        self.model = LocalModel(ModelConfig(parallel=1))
        self.root = self.model.base_url.removesuffix("/v1")
        self.name = f"llama.cpp tokenizer of {self.model.name}"

    def count(self, text: str) -> int:
        body = json.dumps({"content": text, "add_special": False}).encode()
        request = urllib.request.Request(f"{self.root}/tokenize", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return len(json.loads(response.read())["tokens"])


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else data_path("critic", "examples", "ideas.json")
    ideas = CriticInput.model_validate_json(path.read_text(encoding="utf-8"))
    settings = load_settings(None, {"llm": {"provider": "python:critic.scripted:judge"}})
    _, _, profile = preflight(settings)
    language = language_of(" ".join(f"{i.title} {i.description}" for i in ideas.ideas))
    system = system_prompt(profile, LANGUAGE_WORDS[language])
    schema = json.dumps(IdeaJudgement.model_json_schema(by_alias=True), ensure_ascii=False)
    answer = json.dumps(full_answer(), ensure_ascii=False)
    IdeaJudgement.model_validate_json(answer)  # the reference answer is one the critic accepts
    try:
        tokenizer: LlamaTokenizer | None = LlamaTokenizer()
    except Exception as exc:  # llama.cpp or the bundled model not installed: the estimate alone
        sys.stderr.write(f"no real tokenizer ({exc}); counting with the estimate only\n")
        tokenizer = None
    rows = []
    for idea in ideas.ideas:
        user = messages_for(idea, 1)[0].text
        row: dict[str, Any] = {
            "idea": idea.id,
            "estimate": {"system": estimate(system), "idea": estimate(user), "schema": estimate(schema)},
        }
        row["estimate"]["prompt"] = sum(row["estimate"].values())
        if tokenizer is not None:
            counted = {
                "system": tokenizer.count(system),
                "idea": tokenizer.count(user),
                "schema": tokenizer.count(schema),
            }
            row["counted"] = {**counted, "prompt": sum(counted.values())}
        rows.append(row)
    key = "counted" if tokenizer is not None else "estimate"
    answer_tokens = {"estimate": estimate(answer)}
    if tokenizer is not None:
        answer_tokens["counted"] = tokenizer.count(answer)
    longest_prompt = max(r[key]["prompt"] for r in rows)
    max_tokens = int(math.ceil(answer_tokens[key] * HEADROOM / 100.0) * 100)
    report = {
        "ideas": str(path),
        "counter": tokenizer.name if tokenizer is not None else "estimate (no llama.cpp)",
        "per_idea": rows,
        "full_answer_tokens": answer_tokens,
        "recommended": {
            "max_tokens": max_tokens,
            "token_budget": int(math.ceil((longest_prompt + max_tokens) / 100.0) * 100),
            "basis": f"{key}: longest prompt {longest_prompt}, full answer {answer_tokens[key]} x {HEADROOM}",
        },
    }
    sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
