"""The advisor's knowledge base: Markdown documents with metadata, cut into chunks, searched by BM25
over SudachiPy tokens (``core.text.tokenize``), with a slot for a dense scorer."""

__all__: list[str] = []
