"""Claims whose subject comes from the sentence's parse, for figures no explicit shape claimed.

:mod:`nlp.generic_claims` reads a figure when the sentence has a known shape (a record, "X defaults to
Y", a copula...). Many sentences state a figure otherwise: 「ログは7日間保存される」, "The server keeps
10 backups". For those, the subject is read from the sentence's structure:

* ja (GiNZA's dependency parse): from the figure's counter (日間, MB, 件) climb to the predicate it
  attaches to; the subject is the predicate's ``nsubj``/``nsubj:pass`` or its は/が-marked topic, else
  the noun the figure modifies (``nmod``/``compound``: 512MBのメモリ). The attribute is the noun the
  figure counts (100件の接続 -> 接続), else the subject's の-owner split (キャッシュの上限 -> subject
  キャッシュ, attribute 上限; 既定のタイムアウト -> タイムアウト, ``default`` from the data file), else the
  predicate's lemma (保存), else ``value``.
* en with ``en_core_web_sm`` installed (``spacy.util.is_package``): the same walk on its parse.
* en without it (the default here; ``en_core_web_sm`` is not on PyPI): a rule-based finder on spaCy's
  tokenizer. The clause holding the figure ends at punctuation and at clause words; its main verb
  is the first auxiliary before the figure, else the first content verb of the word list; the
  subject is the noun phrase right before that verb; the attribute is the noun the figure counts
  ("10 backups"), else the content verb's lemma ("kept" -> keep), else ``value``.

Words live in ``data/rules/dependency_claims.yaml``. Only finished sentences (not records, listing lines
or fragments) of at most :data:`MAX_SENTENCE_CHARS` characters are parsed, and only their figures that
no claim with a subject and attribute already holds; negated English clauses are skipped. Subjects and
attributes go through :func:`nlp.generic_claims.normalise` so they meet the other shapes' claims in
:mod:`nlp.conflicts`; the claims are marked ``parsed`` and carry less confidence there and in ranking.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from core.policy import PolicyModel, load_policy
from core.resources import data_path
from nlp.claims import Claim, is_statement
from nlp.findings import Sentence, split_sentences
from nlp.generic_claims import MAX_VALUE_CHARS, Reading, normalise, unit_figures
from nlp.values import Value, parse_values

RULES_PATH = data_path("rules", "dependency_claims.yaml")
MAX_SENTENCE_CHARS = 200  # longer sentences hold several clauses: a wrong subject gets likelier
_FINISHED = re.compile(r"[.!?。！？][\"'”’)）」』\]]*$")
_RECORD = re.compile(r"^[^:;\n]{1,80}: \S")
_DIGIT = re.compile(r"[0-9０-９]")
_WORDISH = re.compile(r"^[\w./%#@$+-]+$")
_SUBJECT_DEPS = frozenset({"nsubj", "nsubj:pass", "nsubjpass", "csubj"})
_MODIFIER_DEPS = frozenset({"nmod", "compound", "nummod", "amod"})
_MAX_CLIMB = 4


class _Words(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JaWords(_Words):
    attribute_modifiers: dict[str, str] = Field(default_factory=dict)
    plain_predicates: frozenset[str] = frozenset()
    pronouns: frozenset[str] = frozenset()
    counted_units: frozenset[str] = frozenset()


class EnWords(_Words):
    auxiliaries: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()
    irregular: dict[str, str] = Field(default_factory=dict)
    plain_verbs: frozenset[str] = frozenset()
    noun_phrase_stops: frozenset[str] = frozenset()
    clause_breaks: frozenset[str] = frozenset()
    negations: frozenset[str] = frozenset()
    conditionals: frozenset[str] = frozenset()

    def lemma(self, word: str) -> str | None:
        """The base form of a known verb form (keeps, kept, stored, using), else None."""
        w = word.lower()
        if w in self.irregular:
            return self.irregular[w]
        if w in self.verbs:
            return w
        for suffix, add in (("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", ""), ("ing", ""), ("ing", "e")):
            if w.endswith(suffix) and (base := w[: -len(suffix)] + add) in self.verbs:
                return base
        if w.endswith(("ied", "ies")) and (base := w[:-3] + "y") in self.verbs:
            return base
        if len(w) > 4 and w[-3] == w[-4] and w.endswith("ed") and w[:-3] in self.verbs:  # dropped -> drop
            return w[:-3]
        return None


class DependencyWords(PolicyModel):
    """The shape of ``dependency_claims.yaml`` (its header explains each key)."""

    policy_name: ClassVar[str] = "dependency claim words"

    references: tuple[str, ...] = ()
    references_after: tuple[str, ...] = ()
    ja: JaWords = JaWords()
    en: EnWords = EnWords()

    def is_reference(self, sentence: str, v: Value) -> bool:
        """Whether the number names a part or release (section 5.14, 第3章, version 1.2.3), not a figure."""
        before, after = sentence[: v.start].rstrip().lower(), sentence[v.end :]
        if re.match(r"\.\d", after) or before.endswith("."):
            return True
        word = before.rsplit(None, 1)[-1] if before.split() else ""
        return (
            word in self.references
            or any(before.endswith(r) and not r.isascii() for r in self.references)
            or (after.startswith(self.references_after))
        )


@cache
def load_words(path: Path = RULES_PATH) -> DependencyWords:
    """The word lists, read once per process; a ConfigError names the file and line of a bad entry."""
    return load_policy(path, DependencyWords)


@dataclass(frozen=True)
class Word:
    """One token of a parsed sentence (offsets into the sentence; ``head`` an index, itself for a root)."""

    text: str
    lemma: str
    pos: str
    dep: str
    head: int
    start: int
    end: int


# --- which figures are open -----------------------------------------------------------------------


def sentence_figures(sentence: str) -> list[Value]:
    """The figures of a sentence that a claim can hold: :func:`nlp.values.parse_values` (not dates),
    plus numbers with a size, time or count unit that it leaves out (``512MB``, ``7日間``, ``30s``)."""
    figures = unit_figures(sentence)
    values = parse_values(sentence)
    for v in values:
        if v.kind != "date" and v.value is not None and not any(v.start < f.end and f.start < v.end for f in figures):
            figures.append(v)
    dates = [v for v in values if v.kind == "date"]
    words = load_words()
    return sorted(
        (
            f
            for f in figures
            if not any(d.start < f.end and f.start < d.end for d in dates)
            and not words.is_reference(sentence, f)
            and not (f.kind == "number" and f.unit is None and re.search(r"\d\.\d", f.raw))  # 3.0, 2.9-3: versions
            and not re.match(r"-\d|\s?\(", sentence[f.end :])  # a version (2.9-3) or a format name (3.0 (quilt))
            and not f.raw.endswith("日")  # 29日: a day of the month more often than a duration
            and not (f.raw.endswith("分") and sentence[f.end : f.end + 1] == "の")  # 3分の2: a fraction
        ),
        key=lambda v: v.start,
    )


def _parseable(sentence: str) -> bool:
    text = sentence.strip()
    return (
        len(text) <= MAX_SENTENCE_CHARS
        and bool(_FINISHED.search(text))
        and not _RECORD.match(text)
        and is_statement(text)
    )


def open_figures(s: Sentence, claims: Sequence[Claim]) -> list[Value]:
    """The figure of a parseable one-figure sentence when no claim with a subject or attribute holds it
    (sentence offsets). Sentences with several figures are enumerations and comparisons, which a
    subject per figure misreads; the explicit shapes and the vocabulary read those."""
    if not _DIGIT.search(s.text) or not _parseable(s.text):
        return []
    figures = sentence_figures(s.text)
    if len(figures) != 1:
        return []
    held = [
        (v.start - s.start, v.end - s.start)
        for c in claims
        if (c.subject or c.attribute) and s.start <= c.start < s.end
        for v in c.values
    ]
    return [v for v in figures if not any(a < v.end and v.start < b for a, b in held)]


# --- parsing ----------------------------------------------------------------------------------------


def en_parser_installed() -> bool:
    """Whether English subjects come from ``en_core_web_sm``'s parse (else from the rule-based finder)."""
    import spacy

    from nlp.pipelines import EN_MODEL

    return bool(spacy.util.is_package(EN_MODEL))


def parse(sentences: Sequence[str], lang: str) -> list[list[Word]]:
    """Tokens of each sentence: with heads and relations from GiNZA (ja) or ``en_core_web_sm``; only the
    tokenizer's for English without it. Runs only the components a parse needs."""
    from nlp.pipelines import using

    if not sentences:
        return []
    keep = {"tok2vec", "parser"} if lang == "ja" else {"tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"}
    out: list[list[Word]] = []
    with using(lang) as nlp:
        disable = [name for name in nlp.pipe_names if name not in keep]
        for doc in nlp.pipe(sentences, disable=disable, batch_size=64):
            out.append(
                [
                    Word(
                        text=t.text,
                        lemma=t.lemma_ or t.text,
                        pos=t.pos_,
                        dep=t.dep_.removesuffix("_bunsetu"),  # GiNZA's parser labels before its bunsetu step
                        head=t.head.i,
                        start=t.idx,
                        end=t.idx + len(t.text),
                    )
                    for t in doc
                ]
            )
    return out


# --- readings from a dependency tree -----------------------------------------------------------------


class _Tree:
    def __init__(self, sentence: str, words: list[Word], lang: str) -> None:
        self.sentence, self.words, self.lang = sentence, words, lang
        self.kids: dict[int, list[int]] = defaultdict(list)
        for i, w in enumerate(words):
            if w.head != i:
                self.kids[w.head].append(i)

    def covering(self, v: Value) -> list[int]:
        return [i for i, w in enumerate(self.words) if w.start < v.end and v.start < w.end]

    def span(self, i: int, deps: frozenset[str]) -> tuple[int, int]:
        """Character span of word ``i`` and its left modifiers with ``deps`` (recursively)."""
        start = self.words[i].start
        for k in self.kids[i]:
            if k < i and self.words[k].dep in deps:
                start = min(start, self.span(k, deps)[0])
        return start, self.words[i].end

    def phrase(self, i: int) -> str:
        deps = frozenset({"compound", "amod", "flat"}) if self.lang == "en" else frozenset({"compound"})
        start, end = self.span(i, deps)
        return self.sentence[start:end]

    def is_predicate(self, i: int) -> bool:
        w = self.words[i]
        return (
            w.head == i
            or w.pos in ("VERB", "ADJ")
            or any(self.words[k].dep in ("cop", *_SUBJECT_DEPS) for k in self.kids[i])
        )

    def subject_of(self, p: int, exclude: set[int]) -> int | None:
        kids = [k for k in self.kids[p] if k not in exclude]
        for k in kids:
            if self.words[k].dep in _SUBJECT_DEPS:
                return k
        for k in kids:  # a topic marked by は/が that the parser attached otherwise
            if any(self.words[c].dep == "case" and self.words[c].text in ("は", "が") for c in self.kids[k]):
                return k
        return None

    def owner(self, i: int) -> int | None:
        """The の-/of-owner of a noun: キャッシュ in キャッシュの上限, cache in "limit of the cache"."""
        for k in self.kids[i]:
            marks = {self.words[c].text.lower() for c in self.kids[k] if self.words[c].dep == "case"}
            if self.words[k].dep == "nmod" and marks & {"の", "of"} and self.words[k].pos in ("NOUN", "PROPN"):
                return k
        return None


def _attribute_ok(attribute: str) -> bool:
    return bool(attribute) and len(attribute) <= 30 and not re.search(r"[\d%％「」\"]", attribute)


def _subject_ok(subject: str, words: DependencyWords) -> bool:
    return (
        len(subject) >= 2
        and not re.search(r"[「」『』\"]", subject)
        and len(subject) <= 40
        and len(subject.split()) <= 5
        and not re.search(r"\d", subject)
        and subject not in words.ja.pronouns
        and subject.lower() not in words.en.noun_phrase_stops
    )


def tree_readings(sentence: str, words: list[Word], figures: Sequence[Value], lang: str) -> list[Reading]:
    """Readings of open figures from a dependency parse (GiNZA, or ``en_core_web_sm``)."""
    lex = load_words()
    tree = _Tree(sentence, words, lang)
    plain = lex.ja.plain_predicates | lex.en.plain_verbs
    readings: list[Reading] = []
    for v in figures:
        inside = tree.covering(v)
        if not inside:
            continue
        unit = inside[-1]
        nums = [i for i in inside if words[i].pos == "NUM"]
        if nums and words[nums[0]].dep == "nummod" and words[nums[0]].head not in inside:
            unit = words[nums[0]].head  # 100 -> 件 outside the figure's characters
        counted: int | None = None
        anchor = unit
        counts = (
            lang == "en"
            or words[unit].text in lex.ja.counted_units
            or words[unit].pos == "NUM"
            or v.unit in ("byte", "second")  # 512MBのメモリ, 3秒の遅延: the noun is what the size or time measures
        )
        if words[unit].dep in _MODIFIER_DEPS and words[words[unit].head].pos in ("NOUN", "PROPN") and counts:
            counted = anchor = words[unit].head  # 100件の接続, "10 backups": the figure counts this noun
        elif lang == "en" and words[unit].pos in ("NOUN", "PROPN") and words[unit].dep not in ("nummod",):
            counted = unit if v.unit is None else None  # "10 backups" with the number as nummod of the noun
        p, steps = anchor, 0
        while not tree.is_predicate(p) and steps < _MAX_CLIMB:
            p, steps = words[p].head, steps + 1
        if not tree.is_predicate(p):
            continue
        taken = set(inside) | {unit, anchor}
        subject_i = tree.subject_of(p, taken)
        attribute: str | None = None
        modified = subject_i is None and counted is not None and counted != p
        if modified:
            subject_i, counted = counted, None  # 512MBのメモリを使用する: the noun the figure modifies
        if subject_i is None or (words[subject_i].start >= v.start and not modified):
            continue  # a subject after its figure is a relative clause's head, not what the sentence is about
        subject = tree.phrase(subject_i)
        owner = tree.owner(subject_i)
        if owner is not None:
            head, mod = subject, tree.phrase(owner)
            if mod in lex.ja.attribute_modifiers:  # 既定のタイムアウト: the modifier names the property
                subject, attribute = head, lex.ja.attribute_modifiers[mod]
            else:
                subject, attribute = mod, head
        if counted is not None and counted != subject_i:
            attribute = tree.phrase(counted)
        if attribute is None:
            lemma = words[p].lemma.lower() if lang == "en" else words[p].lemma
            attribute = lemma if words[p].pos in ("VERB", "ADJ") and lemma not in plain else "value"
        subject, attribute = normalise(subject), normalise(attribute)
        if _subject_ok(subject, lex) and _attribute_ok(attribute) and subject != attribute:
            readings.append((subject, attribute, v, False))
    return readings


# --- readings from English token rules ----------------------------------------------------------------


def rule_readings(sentence: str, words: list[Word], figures: Sequence[Value]) -> list[Reading]:
    """Readings of open figures in English from tokens only (no parser installed): see the module docstring."""
    lex = load_words().en
    low = [w.text.lower() for w in words]
    readings: list[Reading] = []
    for v in figures:
        first = next((i for i, w in enumerate(words) if w.end > v.start), None)
        if first is None:
            continue
        start = max(
            (i + 1 for i in range(first) if low[i] in lex.clause_breaks or not _WORDISH.match(words[i].text)),
            default=0,
        )
        if any(low[i] in lex.negations or low[i].endswith("n't") for i in range(start, first)):
            continue
        if start > 0 and low[start - 1] in lex.conditionals:
            continue
        verb = _main_verb(low, start, first, lex)
        if verb is None:
            continue
        subject = _noun_phrase(sentence, words, low, start, verb, lex)
        if subject is None:
            continue
        content = next(
            (lex.lemma(low[i]) for i in range(verb, first) if low[i] not in lex.auxiliaries and lex.lemma(low[i])),
            None,
        )
        last = next((i for i in range(first, len(words)) if words[i].end >= v.end), len(words) - 1)
        counted = _counted_noun(words, low, last + 1, lex) if v.unit is None and v.kind == "number" else None
        if counted is None and v.kind == "count" and v.unit is None:
            counted = _counted_noun(words, low, last + 1, lex)
        attribute = counted or (content if content and content not in lex.plain_verbs else "value")
        subject, attribute = normalise(subject), normalise(attribute)
        if _subject_ok(subject, load_words()) and _attribute_ok(attribute) and subject != attribute:
            readings.append((subject, attribute, v, False))
    return readings


def _main_verb(low: list[str], start: int, end: int, lex: EnWords) -> int | None:
    """The first auxiliary of the clause before the figure, else its first content verb with a subject before it."""
    aux = next((i for i in range(start, end) if low[i] in lex.auxiliaries), None)
    if aux is not None:
        return aux if aux > start else None
    return next((i for i in range(start + 1, end) if lex.lemma(low[i]) and low[i - 1] not in _DETERMINERS), None)


_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "each", "every", "its", "their", "our"})


def _noun_phrase(sentence: str, words: list[Word], low: list[str], start: int, verb: int, lex: EnWords) -> str | None:
    """The noun phrase right before the verb: back over words until a stop word, a determiner included."""
    i = verb
    while i > start and low[i - 1] not in lex.noun_phrase_stops and _WORDISH.match(words[i - 1].text):
        i -= 1
        if low[i] in _DETERMINERS:
            break
    if i == verb or all(low[k] in _DETERMINERS for k in range(i, verb)):
        return None
    return sentence[words[i].start : words[verb - 1].end]


def _counted_noun(words: list[Word], low: list[str], i: int, lex: EnWords) -> str | None:
    """The one or two words a bare number counts: "10 backups", "100 concurrent connections"."""
    taken: list[str] = []
    while i < len(words) and len(taken) < 2 and words[i].text.isalpha():
        if low[i] in lex.noun_phrase_stops or low[i] in lex.auxiliaries or low[i] in _DETERMINERS:
            break
        if taken and lex.lemma(low[i]):
            break
        taken.append(words[i].text)
        i += 1
    return " ".join(taken) or None


# --- the step ----------------------------------------------------------------------------------------


def parsed_claims(sentence: Sentence, words: list[Word], figures: Sequence[Value], lang: str) -> list[Claim]:
    """Claims for the open figures of one sentence (page offsets), one per subject and attribute."""
    if lang == "ja" or any(w.dep for w in words):
        readings = tree_readings(sentence.text, words, figures, lang)
    else:
        readings = rule_readings(sentence.text, words, figures)
    groups: dict[tuple[str, str], list[Value]] = {}
    for subject, attribute, value, _ in readings:
        if len(value.raw) > MAX_VALUE_CHARS:
            continue
        moved = value.model_copy(update={"start": value.start + sentence.start, "end": value.end + sentence.start})
        groups.setdefault((subject, attribute), []).append(moved)
    return [
        Claim(
            text=sentence.text,
            start=sentence.start,
            end=sentence.end,
            subject=subject,
            attribute=attribute,
            values=values,
            when=None,
            polarity="positive",
            entities=[],
            lang=lang,
            parsed=True,
        )
        for (subject, attribute), values in groups.items()
    ]


def _superseded(claim: Claim, held: set[tuple[int, int, int]]) -> bool:
    """A claim without subject or attribute whose figures (if any) a parsed claim of its sentence now holds."""
    if claim.subject and claim.attribute:
        return False
    mine = [(a, b) for start, a, b in held if start == claim.start]
    return bool(mine) and all(any(a < v.end and v.start < b for a, b in mine) for v in claim.values)


def add_parsed_claims(documents: Sequence[tuple[str, str, list[Claim]]]) -> list[list[Claim]]:
    """Each ``(text, lang, claims)`` document's claims plus claims read from the parse of its open
    figures; one batched parse per language. A sentence's claim without subject or attribute is dropped
    when parsed claims now hold all its figures; every other claim is kept as it is, in text order."""
    jobs: dict[str, list[tuple[int, Sentence, list[Value]]]] = defaultdict(list)
    for d, (text, lang, claims) in enumerate(documents):
        if lang not in ("ja", "en"):
            continue
        for s in split_sentences(text):
            figures = open_figures(s, claims)
            if figures:
                jobs[lang].append((d, s, figures))
    added: list[list[Claim]] = [[] for _ in documents]
    for lang, items in jobs.items():
        for (d, s, figures), words in zip(items, parse([s.text for _, s, _ in items], lang), strict=True):
            added[d].extend(parsed_claims(s, words, figures, lang))
    out = []
    for (_, _, claims), extra in zip(documents, added, strict=True):
        if not extra:
            out.append(claims)
            continue
        held = {(c.start, v.start, v.end) for c in extra for v in c.values}
        kept = [c for c in claims if not _superseded(c, held)]
        out.append(sorted([*kept, *extra], key=lambda c: c.start))
    return out


__all__ = [
    "MAX_SENTENCE_CHARS",
    "RULES_PATH",
    "DependencyWords",
    "EnWords",
    "JaWords",
    "Word",
    "add_parsed_claims",
    "en_parser_installed",
    "load_words",
    "open_figures",
    "parse",
    "parsed_claims",
    "rule_readings",
    "sentence_figures",
    "tree_readings",
]
