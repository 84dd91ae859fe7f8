"""A Japanese font for charts and PDFs, found by file on every call (never through a font cache).

matplotlib caches its font list on first use (``~/.cache/matplotlib`` or ``$MPLCONFIGDIR``): a font
installed after that is invisible to ``font_manager.findfont`` until the cache is rebuilt, and a cache
written while the font existed still names it after it is gone. So the font is looked up here as a
file — the configured path, else what fontconfig lists for Japanese, else the usual Debian paths —
and handed to matplotlib and fpdf2 by path. A missing font is an answer (None), not an error: charts
are optional, and each caller decides what to leave out and how to say so.

fpdf2 embeds only TrueType outlines (``.ttf``); matplotlib also reads OpenType/CFF collections
(Noto CJK's ``.ttc``). IPAex Gothic (Debian ``fonts-ipaexfont-gothic``) serves both, so it is the
package to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

FONT_PACKAGE = "fonts-ipaexfont-gothic"
INSTALL_HINT = f"sudo apt-get install {FONT_PACKAGE}"
# preferred files first: TrueType (embeddable in PDFs) before OpenType collections
KNOWN_FILES = (
    "ipaexg.ttf",
    "ipag.ttf",
    "fonts-japanese-gothic.ttf",
    "TakaoGothic.ttf",
    "NotoSansCJK-Regular.ttc",
    "NotoSansCJKjp-Regular.otf",
    "NotoSansJP-Regular.otf",
)
FONT_DIRS = (
    Path("/usr/share/fonts"),
    Path("/usr/local/share/fonts"),
    Path.home() / ".local/share/fonts",
    Path.home() / ".fonts",
)
TRUETYPE = (".ttf",)
ANY_OUTLINE = (".ttf", ".ttc", ".otf")


def find_japanese_font(configured: Path | None = None, *, truetype_only: bool = False) -> Path | None:
    """The font file to use, or None when this machine has none (``configured`` wins when it exists)."""
    suffixes = TRUETYPE if truetype_only else ANY_OUTLINE
    if configured is not None:
        return configured if configured.is_file() and configured.suffix.lower() in suffixes else None
    candidates = [*_known_files(), *_fontconfig_files()]
    usable = [path for path in candidates if path.suffix.lower() in suffixes and path.is_file()]
    return usable[0] if usable else None


def _known_files() -> list[Path]:
    found: dict[str, Path] = {}
    wanted = set(KNOWN_FILES)
    for folder in FONT_DIRS:
        for parent, _dirs, files in os.walk(folder):
            for name in wanted.intersection(files):
                found.setdefault(name, Path(parent) / name)
    return [found[name] for name in KNOWN_FILES if name in found]


def _fontconfig_files() -> list[Path]:
    """Files fontconfig lists as covering Japanese (its cache may be stale: callers check each exists)."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return []
    try:
        done = subprocess.run([fc_list, ":lang=ja", "file"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted(Path(line.strip().rstrip(":")) for line in done.stdout.splitlines() if line.strip())


def missing_font_message(what: str, lang: str = "ja") -> str:
    """One line for a person, in their language: what was left out, why, and the command that adds it."""
    if lang == "ja":
        return f"{what}は省略しました。この環境に日本語フォントがありません（追加するには `{INSTALL_HINT}`）。"
    return f"{what} left out: no Japanese font is installed on this machine (add one with `{INSTALL_HINT}`)."


__all__ = ["FONT_PACKAGE", "INSTALL_HINT", "find_japanese_font", "missing_font_message"]
