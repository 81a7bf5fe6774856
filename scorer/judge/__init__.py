"""The judges: the primitive questions of every metric (base.py), answered offline (local/) or by an LLM (openai/)."""
