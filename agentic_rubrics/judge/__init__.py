"""Judges: one verdict per rubric item for one candidate (the checks-only judge, the batched LLM judge)."""
