"""What a person is shown about a result in the report's language, kept with the result (report.json) so
that every page showing it (the research page) says what the report says."""

from __future__ import annotations

from core.models import CamelModel


class DisputeLabel(CamelModel):
    """A disputed figure in words: what it is (「中小企業 / 価格転嫁率」), when, the kind of dispute (矛盾),
    and the suggested reading (research/report.py words :class:`nlp.conflicts.Reading`)."""

    conflict_id: str
    label: str
    when: str | None = None
    kind: str
    reading: str | None = None


__all__ = ["DisputeLabel"]
