"""Builds the configured judge. Imports are lazy so the default install never loads the other one."""

from __future__ import annotations

import dataclasses

from ragpulse.scorer.config import OFFLINE_JUDGES, ScorerConfig
from ragpulse.scorer.judge.base import Judge


def build_offline_judge(name: str = "local") -> Judge:
    """`local` (the lexical judge) or `learned`."""
    from ragpulse.scorer.judge.local import LearnedJudge, LexicalJudge

    if name not in OFFLINE_JUDGES:
        raise ValueError(f"{name!r} is not an offline judge ({', '.join(OFFLINE_JUDGES)})")
    return LearnedJudge() if name == "learned" else LexicalJudge()


def build_judge(config: ScorerConfig) -> Judge:
    if config.judge in OFFLINE_JUDGES:
        return build_offline_judge(config.judge)
    if config.judge == "openai" and config.openai is not None:
        from ragpulse.scorer.judge.local import LexicalJudge
        from ragpulse.scorer.judge.openai.judge import OpenAIJudge

        # Without an embeddings endpoint, answer relevancy embeds with the offline static model.
        fallback = None if config.openai.embedding_model else LexicalJudge()
        # One setting for n: the judge batches the answer's calls only when its n is the metric's.
        settings = dataclasses.replace(config.openai, n_questions=config.answer_relevancy_questions)
        return OpenAIJudge(settings, fallback_embedder=fallback)
    raise ValueError(f"judge {config.judge!r} is not configured")
