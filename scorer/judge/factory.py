"""Builds the configured judge. Imports are lazy so the default install never loads the other one."""

from __future__ import annotations

import dataclasses

from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.base import Judge


def build_judge(config: ScorerConfig) -> Judge:
    from ragpulse.scorer.judge.local import LocalJudge

    if config.judge == "local":
        return LocalJudge()
    if config.judge == "openai" and config.openai is not None:
        from ragpulse.scorer.judge.openai.judge import OpenAIJudge

        # Without an embeddings endpoint, answer relevancy embeds with the offline model.
        fallback = None if config.openai.embedding_model else LocalJudge()
        # One setting for n: the judge batches the answer's calls only when its n is the metric's.
        settings = dataclasses.replace(config.openai, n_questions=config.answer_relevancy_questions)
        return OpenAIJudge(settings, fallback_embedder=fallback)
    raise ValueError(f"judge {config.judge!r} is not configured")
