"""Care for the owner: the consultation contacts the answers name, taken from the knowledge base
(``data/advisor/referrals.yaml`` lists which sections of ``data/kb/consultation.md``), each with its
public source URL; and the words that show an owner in distress (``data/advisor/distress.yaml``)."""

from __future__ import annotations

from functools import cache
from typing import ClassVar

from pydantic import Field

from advisor.kb.documents import Chunk
from advisor.kb.retriever import knowledge_base
from core.errors import ConfigError
from core.policy import PolicyModel, load_policy
from core.resources import data_path


class Referrals(PolicyModel):
    policy_name: ClassVar[str] = "advisor referrals file"
    document: str
    legal: list[str] = Field(min_length=1)
    distress: list[str] = Field(min_length=1)


class DistressWords(PolicyModel):
    policy_name: ClassVar[str] = "advisor distress file"
    words: list[str] = Field(min_length=1)


@cache
def referrals() -> Referrals:
    return load_policy(data_path("advisor", "referrals.yaml"), Referrals)


def contacts(kind: str) -> list[Chunk]:
    """The knowledge-base sections of the ``legal`` or ``distress`` contacts, in the file's order."""
    wanted = referrals().legal if kind == "legal" else referrals().distress
    chunks = {c.section: c for c in knowledge_base().chunks if c.document == referrals().document}
    missing = [s for s in wanted if s not in chunks]
    if missing:
        raise ConfigError(
            f"advisor referrals file {data_path('advisor', 'referrals.yaml')}: no section {missing} in the "
            f"knowledge-base document {referrals().document!r}"
        )
    return [chunks[s] for s in wanted]


def contacts_text(kind: str, full: bool = False) -> str:
    """One line per contact: its name and source URL (``full``: with what it offers, the section's text)."""
    return "\n".join(
        f"- {c.section}: {' '.join(c.content.split())}（出典: {c.source}）" if full else f"- {c.section}: {c.source}"
        for c in contacts(kind)
    )


def in_distress(message: str) -> bool:
    return any(w in message for w in load_policy(data_path("advisor", "distress.yaml"), DistressWords).words)


def distress_note() -> str:
    """What every answer to an owner in distress ends with, whatever the model wrote."""
    intro = "おひとりで抱え込まないでください。次の公的な窓口で、無料で話を聞いてもらえます。"
    return f"{intro}\n{contacts_text('distress', full=True)}"


__all__ = ["DistressWords", "Referrals", "contacts", "contacts_text", "distress_note", "in_distress", "referrals"]
