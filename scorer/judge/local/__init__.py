"""The offline judges, no API key: `local` (rules and static embeddings, judge.py) and `learned` (a
cross-encoder's answers on the same aligner, learned.py)."""

from ragpulse.scorer.judge.local.judge import LexicalJudge
from ragpulse.scorer.judge.local.learned import LearnedJudge

__all__ = ["LearnedJudge", "LexicalJudge"]
