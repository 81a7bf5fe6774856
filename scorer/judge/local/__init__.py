"""The `local` judge: offline, no API key, no neural network at run time (see judge.py)."""

from ragpulse.scorer.judge.local.judge import LocalJudge

__all__ = ["LocalJudge"]
