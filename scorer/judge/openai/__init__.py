"""The `openai` judge: any OpenAI-compatible endpoint answers the primitive questions (judge.py).

Imports nothing on purpose: the scorer's configuration reads config.py, and that must not load
the openai SDK (seconds of start-up) when the judge is local.
"""
