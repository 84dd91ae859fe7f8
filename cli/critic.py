"""``magi critic IDEAS.json``: score the ideator's ideas on market and Mitsubishi Estate synergy, pick the best.

Prints the CriticOutput (``--format json``) or, in the ideas' language, the ranking with each idea's
reasons, story, capability points and arithmetic (markdown). Bad input or options exit 2, no LLM
configured 3, no idea evaluable 1 (one line naming every idea's error); no idea at or above
``critic.min_total`` is still a result (exit 0, ``selectedIdea: null`` with the reason).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from cli.common import emit, settings_from
from critic.settings import CRITIC_OPTIONS

if TYPE_CHECKING:
    from critic.models import CriticInput, CriticOutput


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "critic",
        parents=[shared],
        help="score business ideas on market size and Mitsubishi Estate synergy",
        description='Evaluate the ideas of IDEAS.json ({"ideas": [...]}, 1-10 ideas) and select the best.',
    )
    parser.add_argument("ideas", type=Path, metavar="IDEAS.json", help="the ideator's output")
    CRITIC_OPTIONS.add_flags(parser)
    parser.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    parser.set_defaults(handler=run)


def read_ideas(path: Path) -> CriticInput:
    """The ideas file, validated; any problem is one InputError naming the file and the field."""
    from pydantic import ValidationError

    from core.errors import InputError
    from core.files import read_input_text
    from core.validation import load_json
    from critic.models import CriticInput

    text = read_input_text(path, "ideas file")
    raw = load_json(text, f"ideas file {path}", '{"ideas": [...]}')
    try:
        return CriticInput.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'top level'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise InputError(f"ideas file {path}: {problems}") from exc


def run(args: argparse.Namespace) -> int:
    return asyncio.run(critic(args))


def markdown(out: CriticOutput) -> str:
    from critic.markdown import critic_markdown

    return critic_markdown(out)


async def critic(args: argparse.Namespace) -> int:
    from core.runtime import ray_runtime
    from core.store import open_store
    from critic.engine import evaluate_ideas, preflight
    from critic.history import remember  # before the store opens: it registers its table
    from sessions.ids import LOCAL_OWNER

    settings = CRITIC_OPTIONS.apply(settings_from(args), CRITIC_OPTIONS.from_args(args))
    ideas = read_ideas(args.ideas)  # bad input fails before Ray starts
    preflight(settings)  # bad weights, temperature, industry or no LLM: before Ray starts
    store = open_store(settings)
    async with ray_runtime(settings, address=args.address) as runtime:
        out = await evaluate_ideas(ideas, settings, runtime, store=store)
    remember(store, LOCAL_OWNER, out)  # for magi history critic
    emit(settings, out.model_dump(mode="json", by_alias=True), markdown(out))
    return 0


__all__ = ["critic", "markdown", "read_ideas", "register", "run"]
