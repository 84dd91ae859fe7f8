"""Document templates and tones (``data/advisor/templates/*.yaml``), validated at load with file/line errors.

A template names its title, its audience (a document for the buyer by default), whether it is a
letter (頭語・結語 from the tone), the fields it needs (each with a Japanese label, a kind that says
how a value is written, and an example: the tool's schema lists them), its paragraphs with
``{field}`` placeholders and the ``{user_text}`` slot for the owner's own paragraphs, and the 記 part.

A paragraph (or a 記 line) may be a mapping ``{text, when: enclosure, join}``: ``when: enclosure``
keeps it only when the document really encloses something (a table or a chart), so a letter never
says 「…を添付いたしました」 over nothing; ``{enclosures}`` names what is enclosed; ``join: true``
continues the paragraph before it instead of starting a new one.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from functools import cache
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.labels import Audience
from core.errors import ConfigError
from core.policy import PolicyModel, load_policy
from core.resources import data_path

DOCUMENT_TYPES = ("quotation", "request_letter", "negotiation_materials", "agreement", "cost_breakdown")
TONES = ("formal", "friendly", "assertive", "urgent")
USER_TEXT = "{user_text}"
HEADER_FIELDS = ("recipient", "sender")  # filled from data.recipient / data.sender
BUILTINS = ("enclosures",)  # placeholders the tool fills itself


class Tone(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    salutation: str = Field(min_length=1, description="頭語, e.g. 拝啓.")
    opening: str = Field(min_length=1)
    closing: str = Field(min_length=1)
    complimentary_close: str = Field(min_length=1, description="結語, e.g. 敬具.")


class ToneFile(PolicyModel):
    policy_name: ClassVar[str] = "advisor tone file"
    tones: dict[str, Tone]


class TemplateField(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    kind: Literal["text", "percent", "amount"] = "text"
    example: str = ""


def placeholders(text: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(text) if name]


class Paragraph(BaseModel):
    """A paragraph with a condition (``when``) or one that continues the paragraph before it (``join``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    when: Literal["enclosure"] | None = None
    join: bool = False


def text_of(item: str | Paragraph) -> str:
    return item if isinstance(item, str) else item.text


class DocumentTemplate(PolicyModel):
    policy_name: ClassVar[str] = "advisor document template"
    title: str = Field(min_length=1)
    audience: Audience = "external"
    letter: bool = False
    fields: dict[str, TemplateField] = Field(default_factory=dict)
    body: list[str | Paragraph] = Field(min_length=1)
    record: list[str | Paragraph] = Field(default_factory=list)

    @model_validator(mode="after")
    def _placeholders_are_fields(self) -> DocumentTemplate:
        texts = [text_of(item) for item in [*self.body, *self.record]]
        used = {n for text in texts if text != USER_TEXT for n in placeholders(text)}
        unknown = sorted(used - set(self.fields) - set(BUILTINS))
        if unknown:
            raise ValueError(f"placeholders {unknown} are not listed under fields")
        return self


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with its ``{name}`` placeholders filled (every one must be in ``values``)."""
    return text.format_map({k: values[k] for k in placeholders(text)})


@cache
def tones() -> dict[str, Tone]:
    loaded = load_policy(data_path("advisor", "templates", "tones.yaml"), ToneFile).tones
    missing = [t for t in TONES if t not in loaded]
    if missing:
        raise ConfigError(f"advisor tone file {data_path('advisor', 'templates', 'tones.yaml')}: no tone {missing}")
    return loaded


@cache
def template(document_type: str) -> DocumentTemplate:
    return load_policy(data_path("advisor", "templates", f"{document_type}.yaml"), DocumentTemplate)


def fields_text() -> str:
    """Every document type's fields, as the tool's schema shows them to a model (short: it is in every prompt)."""
    lines = []
    for kind in DOCUMENT_TYPES:
        tpl = template(kind)
        listed = ", ".join(
            f"{name}({f.label}{' 例' + f.example if f.kind != 'text' else ''})"
            for name, f in tpl.fields.items()
            if name not in HEADER_FIELDS
        )
        header = "recipient, sender必須; " if set(HEADER_FIELDS) <= set(tpl.fields) else ""
        lines.append(f"{kind}: {header}{listed or 'なし'}")
    return "\n".join(lines)


__all__ = [
    "BUILTINS",
    "DOCUMENT_TYPES",
    "HEADER_FIELDS",
    "TONES",
    "USER_TEXT",
    "DocumentTemplate",
    "Paragraph",
    "TemplateField",
    "Tone",
    "ToneFile",
    "fields_text",
    "fill",
    "placeholders",
    "template",
    "text_of",
    "tones",
]
