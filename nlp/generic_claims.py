"""Claims read from syntax and structure, for any subject: no topic vocabulary needed.

The vocabulary in ``data/rules/claim_attributes.yaml`` knows one domain. A manual states its facts
in a few shapes whatever its topic, and these are read here:

* records: a table row rendered as ``key: value; key: value`` (:mod:`scrapers.structure`) gives one
  claim per figure cell, its subject the row's first cell, its attribute the column header
  (``エスケープ表記: %D; デフォルトサイズ: 8`` -> ``(%d, デフォルトサイズ) = 8``); a definition
  ``term: text`` gives the term as subject;
* defaults: "X defaults to Y", "the default (value) of X is Y", "X (default: Y)", Xのデフォルト(値)はY;
* copulas: "the A of X is Y", "X is/are/equals/is set to Y", XのAはY, XはYです (Y a figure);
* changes over time: "X increased/rose/fell from A to B" gives two readings of X, the later as
  a change (``when`` stays unset: the sentence gives no dates to tie them to);
* comparatives: "X is 3 times faster than Y" -> ``(x, faster than y) = 3x``; XはYの2倍 -> ``(x, ratio to y)``.

Subjects and attributes are normalised (:func:`normalise`: NFKC, lower case, no articles, quotes
or trailing punctuation), so two pages saying the same thing about the same subject meet under one
key and :mod:`nlp.conflicts` compares their values. Figures a manual uses that
:func:`nlp.values.parse_values` leaves out on purpose (one-digit numbers, sizes like ``1GB``, ``30s``)
are read by :func:`figure` when they are the value of such a shape.
"""

from __future__ import annotations

import re
import unicodedata

from nlp.values import Value, parse_number, parse_values

_ARTICLES = re.compile(r"^(?:(?:the|a|an|this|that|its|their|each|every)\s+|(?:この|その|あの)\s*)", re.IGNORECASE)
_QUOTES = re.compile(r"[\"'“”‘’`「」『』]")
_TRAIL = re.compile(r"[\s.,;:!?。、，：]+$")
_SPACE = re.compile(r"\s+")
_ASIDE = re.compile(r"\s*[(（][^)）]*[)）]")
_ROLE = re.compile(r"\s+(?:parameter|option|setting|variable|field|directive|key|flag)s?$", re.IGNORECASE)
_NUMBER = r"[-+]?\d+(?:[.,]\d+)*"
_UNIT = (
    r"(?:%|[kKMGT]i?B|bytes?|kilobytes?|megabytes?|gigabytes?|ms|milliseconds?|s|sec|seconds?|min|minutes?"
    r"|h|hours?|days?|characters?|chars?|lines?|columns?|bits?|files?|entries|items?|times|"
    r"文字|バイト|秒間|秒|分間|分|時間|日間|日|行|桁|個|件|回)"
)
# A unit may run into Japanese text (30秒です), not into 目 (1文字目 is a position); a bare number may not
# (2月, 3つ: a date or an unknown counter).
_FIGURE = re.compile(rf"(?<![A-Za-z0-9_.])(?P<num>{_NUMBER})(?:\s?(?P<unit>{_UNIT})(?![A-Za-z0-9_目])|(?![\w]))")
_SIZE = {"kb": 1e3, "kib": 1024, "mb": 1e6, "mib": 1024**2, "gb": 1e9, "gib": 1024**3, "tb": 1e12, "tib": 1024**4}
_TIME = {"ms": 1e-3, "millisecond": 1e-3, "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600}
_TIME |= {
    "hour": 3600,
    "day": 86400,
    "秒": 1,
    "分": 60,
    "時間": 3600,
    "日": 86400,
    "秒間": 1,
    "分間": 60,
    "日間": 86400,
}
# In running text: a Japanese word may follow the unit directly (512MBに設定, 7日間保存)
_FIGURE_IN_TEXT = re.compile(rf"(?<![A-Za-z0-9_.])(?P<num>{_NUMBER})\s?(?P<unit>{_UNIT})(?![A-Za-z0-9_])")

_NP = r"[\w./:%#@$+-]+(?:\s[\w./:%#@$+-]+){0,5}?"
_EN_DEFAULT = (
    re.compile(rf"(?:^|\s)(?P<subject>{_NP})\s+defaults\s+to\s+(?P<value>[^;]+)", re.IGNORECASE),
    re.compile(
        rf"\bthe\s+default(?:\s+value|\s+setting)?\s+(?:of|for)\s+(?P<subject>{_NP})\s+is\s+(?P<value>[^;]+)",
        re.IGNORECASE,
    ),
    re.compile(rf"(?P<subject>{_NP})\s*\(\s*default(?:s)?\s*(?:is|:|=)?\s*(?P<value>[^)]+)\)", re.IGNORECASE),
)
_EN_OF = re.compile(
    rf"\bthe\s+(?P<attribute>[\w -]{{2,40}}?)\s+of\s+(?P<subject>{_NP})\s+(?:is|are|was|were|equals)\s+"
    r"(?:about\s+|approximately\s+|now\s+|currently\s+|set\s+to\s+)?(?P<value>[^;]+)",
    re.IGNORECASE,
)
_EN_COPULA = re.compile(
    rf"(?:^|\s)(?P<subject>{_NP})\s+(?:is|are|equals|is\s+set\s+to|must\s+be|should\s+be|=)\s+"
    r"(?:about\s+|approximately\s+|now\s+|currently\s+|at\s+least\s+|at\s+most\s+)?(?P<value>[^;]+)",
    re.IGNORECASE,
)
_EN_CHANGE = re.compile(
    rf"(?P<subject>{_NP})\s+(?:increased|rose|grew|went\s+up|decreased|fell|dropped|went\s+down|changed|moved)"
    r"\s+from\s+(?P<before>\S+(?:\s\S+)?)\s+to\s+(?P<value>[^;]+)",
    re.IGNORECASE,
)
_EN_SET = re.compile(rf"\bset\s+(?P<subject>{_NP})\s+to\s+(?P<value>[^;]+)", re.IGNORECASE)
_EN_COMPARE = re.compile(
    rf"(?:^|\s)(?P<subject>{_NP})\s+(?:is|are|was|were|runs|became)\s+(?:about\s+|roughly\s+)?"
    r"(?P<value>\d[\d.,]*\s*(?:times|x|%))\s+(?P<how>faster|slower|larger|smaller|bigger|more|less|higher|lower)"
    r"(?:\s+\w+)?\s+than\s+(?P<other>[\w./:%#@$+-]+(?:\s[\w./:%#@$+-]+){0,5})(?=[.,;]|$)",
    re.IGNORECASE,
)
_JA_COMPARE = re.compile(
    r"(?P<subject>[^、。\s「」は]{1,30}?)\s*は\s*(?P<other>[^、。\sは]{1,30}?)\s*(?:の|より|に比べ(?:て)?)\s*"
    r"(?P<value>約?\d[\d.,]*倍)"
)
_JA_DEFAULT = re.compile(r"(?P<subject>[^、。\s「」]{1,30}?)の(?:デフォルト|既定|初期)値?は\s*(?P<value>[^、。]+)")
_JA_OF = re.compile(
    r"(?P<subject>(?![こそあど]の|の)[^、。\s「」は]{1,30}?)の(?P<attribute>[^、。\sのは]{0,14}[^、。\sのはでにとがもを])は\s*(?P<value>[^、。]+)"
)
_JA_COPULA = re.compile(r"(?P<subject>[^、。\s「」は]{1,30}?)は\s*(?P<value>[^、。]+?)(?:です|である|となる|になる)")
_DEFAULT_PREFIX = re.compile(r"^(?:default\s+|(?:既定|デフォルト|初期)の?)(?P<rest>\S.*)$", re.IGNORECASE)
_DEFAULT_WORDS = frozenset({"default", "既定", "デフォルト", "初期"})
_RECORD_PAIR = re.compile(r"^(?P<key>[^:;]{1,80}):\s(?P<value>.*)$")
_GENERIC_SUBJECTS = frozenset({"it", "this", "that", "there", "which", "what", "they", "these", "those", "he", "she"})
MAX_VALUE_CHARS = 40


def normalise(phrase: str) -> str:
    """The key form of a subject or attribute: NFKC, no quotes, articles, asides, role nouns or end
    punctuation; lower case unless it is one identifier-like token (``%D`` and ``%d`` differ)."""
    text = _QUOTES.sub("", unicodedata.normalize("NFKC", phrase)).strip()
    text = _SPACE.sub(" ", _ASIDE.sub("", _TRAIL.sub("", text))).strip()
    text = _ROLE.sub("", _ARTICLES.sub("", text)).strip()
    if " " in text or re.fullmatch(r"[A-Za-z][a-z]*", text):
        text = text.lower()
    return text


def _scaled(number: float, unit: str | None) -> tuple[float, str | None]:
    if not unit:
        return number, None
    lowered = unit.lower().rstrip("s") if unit.isascii() and len(unit) > 2 else unit.lower()
    if lowered in _SIZE:
        return number * _SIZE[lowered], "byte"
    if lowered in ("byte", "bytes"):
        return number, "byte"
    if lowered in _TIME:
        return number * _TIME[lowered], "second"
    return number, lowered


def figure(text: str, offset: int = 0) -> Value | None:
    """The first figure in a short value phrase, as a :class:`Value` with offsets into the sentence.

    Uses :func:`nlp.values.parse_values` first (percentages, money, counts...), then reads plain
    numbers with an optional size, time or count unit: ``8``, ``1GB`` (bytes), ``30s`` (seconds).
    """
    text = text.rstrip(" .。")
    match = _FIGURE.search(text)
    if match is None or _scaled(1.0, match.group("unit"))[1] not in ("byte", "second"):
        for v in parse_values(text):  # sizes and durations are read here; anything else by parse_values
            if v.kind != "date" and v.value is not None:
                return v.model_copy(update={"start": v.start + offset, "end": v.end + offset})
    if match is None:
        return None
    try:
        number, precision = parse_number(match.group("num").replace(",", ""))
    except ValueError:
        return None
    value, unit = _scaled(number, match.group("unit"))
    return Value(
        kind="percent" if unit == "%" else "number",
        value=value,
        unit=unit,
        precision=precision,
        raw=match.group(),
        start=match.start() + offset,
        end=match.end() + offset,
    )


def unit_figures(text: str) -> list[Value]:
    """Every number with a size, time or count unit in running text (``512 MB``, ``512MBに``, ``7日間``,
    ``30s``), which :func:`nlp.values.parse_values` reads without the unit or not at all."""
    found = []
    for m in _FIGURE_IN_TEXT.finditer(text):
        fig = figure(m.group(), m.start())
        if fig is not None and fig.unit is not None and fig.start == m.start():
            found.append(fig)
    return found


def _default_of(subject: str) -> tuple[str, str]:
    """ "the default timeout is 30s", 既定のタイムアウトは30秒です: the default of the timeout, as the
    "X defaults to Y" shape reads it; any other copula subject has the attribute ``value``."""
    match = _DEFAULT_PREFIX.match(subject)
    return (match.group("rest"), "default") if match and _subject_ok(match.group("rest")) else (subject, "value")


def _subject_ok(subject: str) -> bool:
    words = subject.split()
    return bool(subject) and len(subject) <= 60 and subject not in _GENERIC_SUBJECTS and len(words) <= 6


def _value_phrase(match: re.Match[str]) -> tuple[str, int]:
    value = match.group("value")[:MAX_VALUE_CHARS]
    return value, match.start("value")


Reading = tuple[str, str, Value, bool]  # (subject, attribute, value, is a change)


def record_readings(sentence: str) -> list[Reading]:
    """Readings of a record line: ``key: value; key: value`` (a table row) or ``term: text`` (a definition)."""
    parts: list[tuple[str, str, int]] = []
    pos = 0
    for piece in sentence.split("; "):
        match = _RECORD_PAIR.match(piece)
        if match is None and not parts:
            return []
        if match is None:  # a "; " inside a cell: the piece continues the previous value
            key, value, start = parts[-1]
            parts[-1] = (key, f"{value}; {piece}", start)
        else:
            parts.append((match.group("key"), match.group("value"), pos + match.start("value")))
        pos += len(piece) + 2
    if not parts:
        return []
    if len(parts) == 1:
        key, value, start = parts[0]
        subject = normalise(key)
        if not _subject_ok(subject):
            return []
        found = _pattern_readings(value, start, default_subject=subject)
        if found:
            return found
        fig = figure(value[:MAX_VALUE_CHARS], start) if len(value) <= MAX_VALUE_CHARS else None
        return [(subject, "value", fig, False)] if fig else []
    subject = normalise(parts[0][1])
    readings: list[Reading] = []
    if not _subject_ok(subject):
        return []
    for key, value, start in parts[1:]:
        if len(value) > MAX_VALUE_CHARS:
            continue
        fig = figure(value, start)
        if fig is not None:
            readings.append((subject, normalise(key), fig, False))
    return readings


def _pattern_readings(sentence: str, offset: int = 0, default_subject: str | None = None) -> list[Reading]:
    for pattern in (*_EN_DEFAULT, _JA_DEFAULT):
        for match in pattern.finditer(sentence):
            value, start = _value_phrase(match)
            fig = figure(value, start + offset)
            subject = normalise(match.group("subject"))
            if fig is not None and _subject_ok(subject):
                return [(subject, "default", fig, False)]
    if default_subject is not None and re.search(r"\bdefault\b|デフォルト|既定", sentence, re.IGNORECASE):
        after = re.split(r"\bdefault\b|デフォルト|既定", sentence, maxsplit=1, flags=re.IGNORECASE)[1]
        fig = figure(after[:MAX_VALUE_CHARS], offset + len(sentence) - len(after))
        if fig is not None:
            return [(default_subject, "default", fig, False)]
    for pattern in (_EN_COMPARE, _JA_COMPARE):
        for match in pattern.finditer(sentence):
            fig = figure(match.group("value"), match.start("value") + offset)
            subject, other = normalise(match.group("subject")), normalise(match.group("other"))
            if fig is not None and _subject_ok(subject) and other:
                how = normalise(match.group("how")) if "how" in pattern.groupindex else "ratio"
                return [(subject, f"{how} than {other}" if how != "ratio" else f"ratio to {other}", fig, False)]
    for match in _EN_CHANGE.finditer(sentence):
        subject = normalise(match.group("subject"))
        before = figure(match.group("before"), match.start("before") + offset)
        value, start = _value_phrase(match)
        after = figure(value, start + offset)
        if before is not None and after is not None and _subject_ok(subject):
            return [(subject, "value", before, False), (subject, "value", after, True)]
    for pattern in (_EN_OF, _JA_OF, _EN_SET):
        for match in pattern.finditer(sentence):
            value, start = _value_phrase(match)
            fig = figure(value, start + offset)
            subject = normalise(match.group("subject"))
            attribute = normalise(match.group("attribute")) if "attribute" in pattern.groupindex else "value"
            if subject in _DEFAULT_WORDS:  # 既定のタイムアウトは30秒: the timeout's default
                subject, attribute = attribute, "default"
            if fig is not None and _subject_ok(subject) and attribute:
                return [(subject, attribute, fig, False)]
    for pattern in (_EN_COPULA, _JA_COPULA):
        for match in pattern.finditer(sentence):
            value, start = _value_phrase(match)
            if not re.match(r"\s*(?:about\s+|approximately\s+)?[-+]?\d", value, re.IGNORECASE):
                continue  # the value phrase must open with the figure: "X is 8", not "X is used by 3 tools"
            fig = figure(value, start + offset)
            subject, attribute = _default_of(normalise(match.group("subject")))
            if fig is not None and _subject_ok(subject):
                return [(subject, attribute, fig, False)]
    return []


def generic_readings(sentence: str) -> list[Reading]:
    """Every generic reading of one sentence: a record first, else the first sentence shape that fits."""
    return record_readings(sentence) or _pattern_readings(sentence)


__all__ = [
    "MAX_VALUE_CHARS",
    "Reading",
    "figure",
    "generic_readings",
    "normalise",
    "record_readings",
    "unit_figures",
]
