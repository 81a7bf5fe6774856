"""Builds the configured judge. Imports are lazy so the default install never loads the other one."""

from __future__ import annotations

from ragpulse.scorer.judge.base import Judge

from ragpulse.config import ScorerConfig


def build_judge(config: ScorerConfig) -> Judge:
    if config.judge == "local":
        from ragpulse.scorer.judge.local import LocalJudge

        return LocalJudge()
    raise ValueError(f"judge {config.judge!r} is not available in this build")
