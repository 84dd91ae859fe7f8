"""Turn a fetched body into text: binary sniffing and charset detection.

Japanese sites still serve Shift_JIS and EUC-JP pages with no declaration at all, and a wrong guess
turns the whole page into mojibake that extraction and NLP happily process. So the order is:
BOM (unambiguous, wins as in the WHATWG encoding spec), the ``Content-Type`` charset, ``<meta charset>``
/ ``http-equiv`` / the XML declaration, and only then detection. A declared charset is used only if
the body decodes under it without errors; a wrong declaration falls through to detection.
"""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: its BOM starts with the UTF-16 LE one
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Labels whose Python codec is narrower than what browsers actually decode (WHATWG aliases).
_SUPERSETS = {
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "iso-8859-1": "cp1252",
    "latin-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc-kr": "cp949",
}
_META = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_JAPANESE_CANDIDATES = ("cp932", "euc_jp")
_MAGIC = (
    b"\x89PNG",
    b"PK\x03\x04",
    b"%PDF-",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",
    b"\x1f\x8b",
    b"\x7fELF",
    b"RIFF",
    b"OggS",
    b"ID3",
    b"fLaC",
    b"wOFF",
    b"wOF2",
    b"\xd0\xcf\x11\xe0",
    b"Rar!",
    b"7z\xbc\xaf",
)
SNIFF_BYTES = 1024


def sniff_binary(head: bytes) -> str | None:
    """Why ``head`` (the first bytes of a body) is not text, or None if it may be text."""
    for magic in _MAGIC:
        if head.startswith(magic):
            return f"starts with the {magic[:4]!r} signature"
    if b"\x00" in head[:SNIFF_BYTES] and not head.startswith(tuple(bom for bom, _ in _BOMS)):
        return "contains NUL bytes"
    return None


def codec_for(label: str | None) -> str | None:
    """The Python codec for an HTTP/HTML charset label, or None if the label is unknown."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    label = _SUPERSETS.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def declared_charset(body: bytes) -> str | None:
    """The charset a document declares about itself in its first few KB, if any."""
    head = body[:4096]
    match = _XML_DECL.match(head) or _META.search(head)
    return match.group(1).decode("ascii") if match else None


def _strict(body: bytes, codec: str) -> str | None:
    try:
        return body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _nearly(body: bytes, codec: str) -> str | None:
    """Decode if at most one byte in a thousand is invalid: a stray bad byte must not send a page to detection."""
    text = body.decode(codec, errors="replace")
    return text if text.count("\ufffd") <= len(body) // 1000 else None


def _japanese_score(text: str) -> int:
    """Hiragana, full-width katakana and kanji: what a correct Japanese decode is full of.

    Half-width katakana (U+FF61..FF9F) do not count: they are what EUC-JP bytes look like under cp932.
    """
    return sum(
        1 for ch in text if "\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f"
    )


def detect(body: bytes) -> tuple[str, str]:
    """Decode a body that declares nothing: UTF-8 if strictly valid, else the best Japanese codec, else guess."""
    text = _strict(body, "utf-8")
    if text is not None:
        return text, "utf-8"
    best: tuple[int, str, str] | None = None
    for codec in _JAPANESE_CANDIDATES:
        decoded = _strict(body, codec)
        if decoded is not None:
            score = _japanese_score(decoded)
            if best is None or score > best[0]:
                best = (score, decoded, codec)
    if best is not None and best[0] > 0:
        return best[1], best[2]
    text = _nearly(body, "utf-8")
    if text is not None:
        return text, "utf-8"
    guess = from_bytes(body).best()
    if guess is not None and guess.encoding:
        codec = codec_for(guess.encoding) or "utf-8"
        return body.decode(codec, errors="replace"), codec
    return body.decode("utf-8", errors="replace"), "utf-8"


def decode_body(body: bytes, header_charset: str | None = None) -> tuple[str, str]:
    """Return ``(text, codec)`` for a body: BOM, then header charset, then in-document declaration, then detection."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, errors="replace"), codec
    declared = [c for c in (codec_for(header_charset), codec_for(declared_charset(body))) if c]
    for codec in declared:
        text = _nearly(body, codec)
        if text is not None:
            return text, codec
    return detect(body)


__all__ = [
    "SNIFF_BYTES",
    "codec_for",
    "declared_charset",
    "decode_body",
    "detect",
    "sniff_binary",
]
