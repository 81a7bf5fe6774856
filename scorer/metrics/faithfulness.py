"""Faithfulness = |statements supported by the contexts| / |statements in the answer| (Ragas §3).

With a judge that answers degrees of support, a statement counts by that degree. Each statement's
detail carries the context sentence the judge matched it to (`evidence`, null where the judge names
none), so a low score can be read statement by statement.
"""

from __future__ import annotations

from typing import Any

from ragpulse.scorer.judge.base import Judge, RecordText, Usage, Verdict
from ragpulse.scorer.metrics.base import MetricFailure, checked_unit
from ragpulse.scorer.metrics.grounding import checked_statements

# A "sentence" of unpunctuated context (a JSON record, a table) can be the whole context: the scores
# message carries one evidence per statement, so each is cut to what a reader needs.
MAX_EVIDENCE_CHARS = 400


def faithfulness(judge: Judge, rec: RecordText, usage: Usage) -> tuple[float, dict[str, Any]]:
    if not rec.contexts or not any(c.strip() for c in rec.contexts):
        raise MetricFailure("no_contexts", "faithfulness needs at least one non-empty context")
    # Raises no_statements, judge_refused or ungrounded_statement (grounding.py).
    statements = checked_statements(judge, rec, judge.statements(rec, usage), usage)
    verdicts = judge.verify(rec, statements, usage)
    if len(verdicts) != len(statements):
        raise MetricFailure(
            "invalid_judge_output", f"{len(verdicts)} verdicts for {len(statements)} statements"
        )
    support = [checked_unit(v.support if isinstance(v, Verdict) else v, "statement verdict") for v in verdicts]
    evidence = [_cut(v.evidence) if isinstance(v, Verdict) else None for v in verdicts]
    detail = {
        "statements": [
            {"statement": s, "verdict": v, "evidence": e}
            for s, v, e in zip(statements, support, evidence, strict=True)
        ]
    }
    return sum(support) / len(support), detail


def _cut(evidence: str | None) -> str | None:
    if evidence is None or len(evidence) <= MAX_EVIDENCE_CHARS:
        return evidence
    return evidence[: MAX_EVIDENCE_CHARS - 1] + "…"
