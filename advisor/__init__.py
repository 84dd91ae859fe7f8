"""The price pass-through advisor (価格転嫁アドバイザー): an orchestrator that picks a mode per message,
a general consultation mode (Mode 1), a specialist mode (Mode 2) driving six tools through the
platform's tool loop, a BM25 knowledge base, sessions hosted by the replicas (virtual actors) and generated files
in the artifact store."""

__all__: list[str] = []
