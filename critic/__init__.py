"""The business-idea critic: ideas scored on market size and Mitsubishi Estate synergy, best one selected.

Pure Python (models, profile, scoring, cache key, repository, options); the LLM calls run in
``critic/worker.py``, coordinated by :mod:`critic.engine`.
"""
