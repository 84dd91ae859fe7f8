"""The advisor's knowledge base: Markdown documents with metadata, cut into chunks, searched by BM25
over SudachiPy tokens (``scrapers.search.tokenize``), with a slot for a dense scorer."""

__all__: list[str] = []
