"""Text helpers every layer shares, knowing no system: index tokens for Japanese and English
(SudachiPy), and telling listing lines (logs, tables) from sentences."""
