"""MAGI council: three sages deliberate (Thinking with a blind vote, Debate, Voting) and decide."""

__all__: list[str] = []
