"""Bundled data (corpus, rules, prompts, research policy) shipped as package data.

This file only makes the folder importable so that :func:`core.resources.data_path` can find it
with importlib.resources in a checkout and in an installed wheel alike.
"""
