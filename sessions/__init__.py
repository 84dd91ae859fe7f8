"""Conversation sessions shared by every chat system (the router, the advisor): the state, its id
rules and lifetimes, and its persistence in the store. Pure Python; the actor is ``actors/session.py``."""
