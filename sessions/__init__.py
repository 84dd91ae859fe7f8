"""Conversation sessions shared by every chat system (the router, the advisor): the state, its id
rules and lifetimes, its persistence in the store, the session actor (``sessions/actor.py``, one
virtual actor per id) and the gateway a system reaches them through (``sessions/gateway.py``)."""
