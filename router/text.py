"""Normalised text and tokens: what every rule of the router matches against.

Normalisation is NFKC (full-width Latin and digits to ASCII, half-width katakana to full width),
lower case and collapsed whitespace, so ＷｉーＦｉ, Ｗｉ－Ｆｉ and wi-fi read the same. Matching is on
tokens, never raw substrings: Japanese runs go through SudachiPy (split mode C, so ネットワーキング
stays one word and does not contain ネット), each token known by its surface, its dictionary form
(開いてる -> 開く) and its reading (for words written in kana); Latin runs are words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from core.text.tokenize import sudachi_tokenizer

_SPACES = re.compile(r"\s+")
_LATIN_WORD = re.compile(r"[a-z0-9]+(?:['’\-][a-z0-9]+)*")
_JA_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶー]")
_HIRAGANA = re.compile(r"[\u3041-\u3096]")
_KANJI = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々]")
_RUNS = re.compile(r"[a-z0-9]+(?:['’\-][a-z0-9]+)*|[^\sa-z0-9]+")
_DASHES = str.maketrans({"ー": "ー", "－": "-", "‐": "-", "–": "-", "—": "-", "’": "'"})
_KATAKANA_OFFSET = ord("ァ") - ord("ぁ")
TYPO_MIN_LETTERS = 4  # shorter words get no typo allowance: one slip makes another word too often


def normalise(text: str) -> str:
    """NFKC, lower case, one space between words; a long-vowel mark between Latin letters is a hyphen."""
    folded = unicodedata.normalize("NFKC", text).translate(_DASHES).lower()
    folded = re.sub(r"(?<=[a-z])[ー〜~](?=[a-z])", "-", folded)  # ＷｉーＦｉ: a dash typed in kana mode
    return _SPACES.sub(" ", folded).strip()


def katakana(text: str) -> str:
    """Hiragana turned into katakana (readings are compared in katakana)."""
    return "".join(chr(ord(c) + _KATAKANA_OFFSET) if "ぁ" <= c <= "ゖ" else c for c in text)


@dataclass(frozen=True)
class Token:
    """One word of a query: its text, dictionary form, reading (katakana) and where it starts."""

    surface: str
    lemma: str
    reading: str
    start: int
    latin: bool
    pos: str = ""


def _japanese(run: str, offset: int) -> list[Token]:
    """Sudachi's long units (mode C), except that a unit with kanji is split into its middle units
    (mode A): アクセス方法 holds アクセス, 天神駅 holds 駅. Katakana loanwords stay whole, because their
    parts are not words of their own (ネットワーキング must not contain ネット)."""
    from sudachipy import SplitMode

    tokens = []
    for unit in sudachi_tokenizer("C").tokenize(run):
        parts = (list(unit.split(SplitMode.A)) if _KANJI.search(unit.surface()) else []) or [unit]
        for m in parts:
            surface = m.surface()
            if not surface.strip():
                continue
            pos = m.part_of_speech()
            if pos[0] in ("補助記号", "空白"):
                continue
            lemma = m.normalized_form().lower() if not surface.isascii() else surface
            tokens.append(
                Token(
                    surface,
                    lemma,
                    katakana(m.reading_form()),
                    offset + m.begin(),
                    latin=False,
                    pos=f"{pos[0]}/{pos[1]}",
                )
            )
    return tokens


@lru_cache(maxsize=4096)
def tokenize(normalised: str) -> tuple[Token, ...]:
    """Tokens of already normalised text: Latin words as they are, Japanese runs through SudachiPy."""
    tokens: list[Token] = []
    for match in _RUNS.finditer(normalised):
        run = match.group()
        if _LATIN_WORD.fullmatch(run):
            tokens.append(Token(run, run, run, match.start(), latin=True))
        elif _JA_CHAR.search(run):
            tokens.extend(_japanese(run, match.start()))
    return tuple(tokens)


def has_hiragana(text: str) -> bool:
    return _HIRAGANA.search(text) is not None


def japanese_runs(text: str) -> int:
    """Runs of Japanese script in ``text`` (a proxy for Japanese words where there is no kana)."""
    return len(re.findall(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶー]+", text))


def latin_words(text: str) -> int:
    return len(re.findall(r"[a-z]{2,}|[a-z]\b", text))


def typo_of(word: str, keyword: str) -> bool:
    """True when ``word`` is ``keyword`` with one typing slip: a letter missed or doubled, two letters
    swapped (adress, wifii, pirce), or, for keywords of 7+ letters, one letter wrong. Short words are
    not allowed a wrong letter: it makes another real word too often (there/where, pride/price)."""
    if word == keyword or min(len(word), len(keyword)) < TYPO_MIN_LETTERS or abs(len(word) - len(keyword)) > 1:
        return False
    if len(word) == len(keyword):
        diffs = [i for i in range(len(word)) if word[i] != keyword[i]]
        if len(diffs) == 1:
            return len(keyword) >= 7
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and word[diffs[0]] == keyword[diffs[1]]
            and word[diffs[1]] == keyword[diffs[0]]
        )
    short, long = (word, keyword) if len(word) < len(keyword) else (keyword, word)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


@dataclass(frozen=True)
class Term:
    """A keyword or phrase as a sequence of token patterns; ``word*`` in Latin matches by prefix."""

    text: str
    parts: tuple[str, ...]
    prefix: tuple[bool, ...]
    latin: tuple[bool, ...]
    reading: str  # the whole term's reading in katakana ("" for Latin terms), for kana-written queries


@cache
def term(text: str) -> Term:
    """Compile one keyword as written in a policy file."""
    norm = normalise(text)
    star = norm.endswith("*")
    tokens = tokenize(norm.rstrip("*").strip())
    if not tokens:
        raise ValueError(f"keyword {text!r} has no words to match")
    parts = tuple(t.lemma for t in tokens)
    prefix = tuple(star and i == len(tokens) - 1 and t.latin for i, t in enumerate(tokens))
    reading = "".join(t.reading for t in tokens) if not any(t.latin for t in tokens) else ""
    return Term(text, parts, prefix, tuple(t.latin for t in tokens), reading)


@dataclass(frozen=True)
class Hit:
    term: Term
    start: int  # character offset in the normalised query
    fuzzy: bool = False
    index: int = -1  # first token (-1: found by reading)
    length: int = 0  # tokens covered


def _part_matches(token: Token, part: str, prefix: bool, latin: bool, fuzzy: bool) -> tuple[bool, bool]:
    """(matched, by a typo) for one token against one pattern part."""
    if token.lemma == part or token.surface == part:
        return True, False
    if latin and token.latin:
        if prefix and token.surface.startswith(part):
            return True, False
        if fuzzy and typo_of(token.surface, part):
            return True, True
    return False, False


@lru_cache(maxsize=4096)
def _one_deletion_keys(word: str) -> frozenset[str]:
    """``word`` and every string one letter shorter: two words one typing slip apart (a letter missed,
    doubled, swapped or wrong) always share one of these keys, so an index on them finds the
    candidates of :func:`typo_of` without comparing the word with every term."""
    return frozenset([word, *(word[:i] + word[i + 1 :] for i in range(len(word)))])


class TermSet:
    """Terms indexed by their first word, so a query is compared with the few terms that can match."""

    def __init__(self, terms: Iterable[Term]) -> None:
        self.terms = tuple(dict.fromkeys(terms))
        self._first: dict[str, list[Term]] = {}
        self._prefixed: dict[str, list[Term]] = {}  # by the first letter of the prefix
        self._by_slip_key: dict[str, list[tuple[int, Term]]] = {}  # Latin terms, for typos
        for position, t in enumerate(self.terms):
            first = t.parts[0]
            self._first.setdefault(first, []).append(t)
            if t.prefix[0]:
                self._prefixed.setdefault(first[:1], []).append(t)
            if t.latin[0] and len(first) >= TYPO_MIN_LETTERS:
                for key in _one_deletion_keys(first):
                    self._by_slip_key.setdefault(key, []).append((position, t))

    def __iter__(self) -> Iterator[Term]:
        return iter(self.terms)

    def __len__(self) -> int:
        return len(self.terms)

    def __add__(self, other: TermSet) -> TermSet:
        return TermSet(self.terms + other.terms)

    def __contains__(self, item: object) -> bool:
        return item in self.terms

    def starting_at(self, token: Token, fuzzy: bool) -> Sequence[Term]:
        """Terms whose first word may be ``token``: the caller checks the rest of each term."""
        found: Sequence[Term] = self._first.get(token.lemma, ())
        if token.surface != token.lemma and token.surface in self._first:
            found = [*found, *self._first[token.surface]]
        if not token.latin:  # most tokens of a Japanese query: two lookups and done (buckets share no term)
            return found
        word = token.surface
        more = [t for t in self._prefixed.get(word[:1], ()) if word.startswith(t.parts[0])]
        if fuzzy and len(word) >= TYPO_MIN_LETTERS:
            near = {c for key in _one_deletion_keys(word) for c in self._by_slip_key.get(key, ())}
            more += [t for _, t in sorted(near, key=lambda c: c[0]) if typo_of(word, t.parts[0])]
        return list(dict.fromkeys([*found, *more])) if more else found


def find(tokens: Sequence[Token], terms: TermSet, *, fuzzy: bool = True) -> list[Hit]:
    """Every place where one of ``terms`` occurs in ``tokens`` (phrases as consecutive tokens)."""
    hits: list[Hit] = []
    for i, token in enumerate(tokens):
        for t in terms.starting_at(token, fuzzy):
            n = len(t.parts)
            if i + n > len(tokens):
                continue
            typo = False
            for j in range(n):
                ok, by_typo = _part_matches(tokens[i + j], t.parts[j], t.prefix[j], t.latin[j], fuzzy)
                if not ok:
                    break
                typo |= by_typo
            else:
                hits.append(Hit(t, token.start, typo, i, n))
    return hits


def find_by_reading(tokens: Sequence[Token], terms: TermSet, min_kana: int = 4) -> list[Hit]:
    """Terms whose reading appears in the reading of a run of kana-written tokens (えいぎょうじかん),
    for queries typed without kanji; only readings of ``min_kana`` or more, so short ones cannot misfire."""
    kana = [t for t in tokens if not t.latin and all("\u3040" <= c <= "\u30ff" for c in t.surface)]
    if not kana:
        return []
    joined = "".join(t.reading for t in kana)
    hits = []
    for t in terms:
        if len(t.reading) >= min_kana and t.reading in joined:
            at = joined.index(t.reading)
            consumed = 0
            start = kana[0].start
            for k in kana:
                if consumed >= at:
                    start = k.start
                    break
                consumed += len(k.reading)
            hits.append(Hit(t, start, fuzzy=True))
    return hits


__all__ = [
    "Hit",
    "Term",
    "TermSet",
    "Token",
    "find",
    "find_by_reading",
    "has_hiragana",
    "japanese_runs",
    "katakana",
    "latin_words",
    "normalise",
    "term",
    "tokenize",
    "typo_of",
]
