"""Conversation sessions shared by every chat system (the router, the advisor): the state, its id
rules and lifetimes, its persistence in the store, its settings section, and the gateway a system
reaches them through (``sessions/gateway.py``: virtual actors, many hosted by each process)."""
