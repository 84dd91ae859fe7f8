"""The Engineer Cafe router: which agent should answer a visitor's query (pure Python, no Ray).

``Router.route(query, previous_request_type)`` follows the spec's sequence: language detection,
memory questions, classification, request type, follow-ups, agent. Policy lives in
``data/router/*.yaml``; sessions (the previous request type) come from the ``sessions`` package.
"""
