"""Shared foundation: settings, LLM layer, store, events, runtime, errors."""

from core.version import release

__version__ = release()
