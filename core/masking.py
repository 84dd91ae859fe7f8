"""Secrets kept out of what people read: a database URL with its password hidden.

Below both the settings (``magi doctor`` shows them) and the store (its errors name the URL), so
neither imports the other for it. SQLAlchemy parses the URL, loaded only when one is shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


def masked(url: str | URL) -> str:
    """The URL with its password hidden, for messages and logs."""
    from sqlalchemy import exc
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return "<unparsable store URL>"


__all__ = ["masked"]
