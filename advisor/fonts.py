"""The Japanese TrueType font the advisor's charts and PDFs embed (``advisor.font``, else found by file).

A TrueType outline font is needed: matplotlib renders with it and fpdf2 embeds a subset of it in the
PDF. Noto CJK ships as OpenType/CFF collections, which fpdf2 cannot embed, hence IPAex Gothic
(Debian ``fonts-ipaexfont-gothic``). ``advisor.font`` (``MAGI_ADVISOR_FONT``) names another file.
"""

from __future__ import annotations

from pathlib import Path

from advisor.settings import AdvisorSettings
from core.errors import ConfigError
from core.fonts import FONT_PACKAGE, INSTALL_HINT, find_japanese_font


def _opens(path: Path) -> bool:
    """Whether FreeType reads ``path`` as a font (a file named .ttf may be anything)."""
    from matplotlib.ft2font import FT2Font

    try:
        FT2Font(str(path))
    except (RuntimeError, OSError, ValueError):
        return False
    return True


def japanese_font(section: AdvisorSettings) -> Path:
    """The font file; a ConfigError saying what to install or set when there is none.

    Inside the tool loop the error becomes a tool result the model reads (and tells the user); the
    rest of the advisor works without a font."""
    configured = section.font
    found = find_japanese_font(configured, truetype_only=True)
    if found is not None and _opens(found):
        return found
    if configured is not None:
        raise ConfigError(
            f"advisor.font (MAGI_ADVISOR_FONT) = {configured} is not a TrueType font file (.ttf); "
            "point it at a Japanese .ttf such as IPAex Gothic's ipaexg.ttf"
        )
    raise ConfigError(
        f"no Japanese TrueType font for the advisor's charts and PDFs on this machine: install Debian's "
        f"{FONT_PACKAGE} (`{INSTALL_HINT}`) or set MAGI_ADVISOR_FONT to a .ttf file; Word and Excel documents "
        "work without it"
    )


__all__ = ["japanese_font"]
