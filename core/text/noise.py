"""Lines that look like text but are listings: logs, process tables, changelog trailers, shell output.

A manual prints such lines inside prose-looking blocks often enough (a ``<p>`` holding a log excerpt,
a plain-text page). They are full of figures, so a claim extractor would take them for facts:
``18805 postgresql49876 postgres StartTransactionCommand`` is not a statement about anything.
"""

from __future__ import annotations

import re

_JA = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_NUMBERISH = re.compile(r"^[\d\W_]+$|^[0-9a-f]{6,}$|^[A-Za-z_]*\d[\w.:/-]*$", re.IGNORECASE)
_TRAILER = re.compile(r"^--\s|<[^@\s>]+@[^>\s]+>.*\d{4}")  # "-- Name <mail>  Mon, 22 Mar 2010 ..."
_TIMESTAMP = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b|\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")
_STATEMENT_END = re.compile(r"[.!?。！？][\"')\]]*$")


def is_listing_line(text: str) -> bool:
    """Whether a line is a log, table dump, trailer or timestamped record rather than a sentence."""
    line = text.strip()
    if _TRAILER.search(line):
        return True
    tokens = line.split()
    if len(tokens) < 4 or _JA.search(line):
        return False
    numberish = sum(1 for t in tokens if _NUMBERISH.match(t)) / len(tokens)
    if _TIMESTAMP.search(line) and numberish >= 0.25:
        return True
    return numberish >= 0.4 and not _STATEMENT_END.search(line)


__all__ = ["is_listing_line"]
