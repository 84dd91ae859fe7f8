"""The Japanese TrueType font the charts and PDFs embed (IPAex Gothic, Debian ``fonts-ipaexfont-gothic``).

A TrueType outline font is needed: matplotlib renders with it and fpdf2 embeds a subset of it in the
PDF. Noto CJK ships as OpenType/CFF collections, which fpdf2 cannot embed, hence IPAex.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from core.errors import ConfigError

FONT_ENV = "MAGI_ADVISOR_FONT"
PACKAGE = "fonts-ipaexfont-gothic"
CANDIDATES = (
    "/usr/share/fonts/opentype/ipaexfont-gothic/ipaexg.ttf",
    "/usr/share/fonts/truetype/ipaexfont-gothic/ipaexg.ttf",
    "/usr/share/fonts/truetype/fonts-japanese-gothic.ttf",
    "/usr/share/fonts/ipaexfont-gothic/ipaexg.ttf",
)


@cache
def japanese_font() -> Path:
    """The font file: ``MAGI_ADVISOR_FONT``, else the Debian package's path; a ConfigError naming the
    package when none is installed."""
    configured = os.environ.get(FONT_ENV)
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise ConfigError(f"{FONT_ENV}={configured} is not a font file; point it at a Japanese .ttf")
        return path
    for candidate in CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise ConfigError(
        f"no Japanese TrueType font for the advisor's charts and PDFs: install Debian's {PACKAGE} "
        f"(apt-get install {PACKAGE}; .ci/run does it) or set {FONT_ENV} to a .ttf file"
    )


__all__ = ["CANDIDATES", "FONT_ENV", "PACKAGE", "japanese_font"]
