"""Text helpers every layer shares, knowing no system: index tokens for Japanese and English
(``tokenize``: SudachiPy, loaded on first use), and telling listing lines (logs, tables) from
sentences (``noise``). Import from the modules; the package re-exports nothing."""

__all__: list[str] = []
