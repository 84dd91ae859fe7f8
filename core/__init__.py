"""Shared foundation: settings, LLM layer, store, events, runtime, errors."""

__version__ = "0.1.0"
