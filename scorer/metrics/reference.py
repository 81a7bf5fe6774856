"""What the reference-based metrics share: the reference itself, and the judge's support of
statements by a text that is not the record's contexts (the reference, or the answer)."""

from __future__ import annotations

from ragpulse.scorer.judge.base import Judge, RecordText, Usage, Verdict
from ragpulse.scorer.metrics.base import MetricFailure, NotApplicable, checked_unit
from ragpulse.scorer.metrics.grounding import checked_statements


def reference_of(rec: RecordText) -> str:
    """The reference; a record without one is not scored by these metrics, and no failure is counted."""
    if rec.reference is None or not rec.reference.strip():
        raise NotApplicable("no reference")
    return rec.reference


def statements_of(judge: Judge, rec: RecordText, text: str, usage: Usage) -> list[str]:
    """The claims of `text` (the record's answer or its reference), grounded in that text
    (grounding.py: no_statements, judge_refused, ungrounded_statement)."""
    if text == rec.answer:
        source = rec  # the record's own memo: faithfulness already read the answer
    else:
        source = RecordText(rec.question, rec.contexts, text)
    try:
        return checked_statements(judge, source, judge.statements(source, usage), usage)
    except MetricFailure as e:
        if source is rec or e.reason != "no_statements":
            raise
        raise MetricFailure("no_reference_statements", "the reference contains no claim") from None


def support(judge: Judge, question: str, evidence: list[str], statements: list[str], usage: Usage) -> list[float]:
    """How far `evidence` supports each statement, in [0, 1]."""
    if not statements:
        return []
    verdicts = judge.verify(RecordText(question, evidence, ""), statements, usage)
    if len(verdicts) != len(statements):
        raise MetricFailure("invalid_judge_output", f"{len(verdicts)} verdicts for {len(statements)} statements")
    return [checked_unit(v.support if isinstance(v, Verdict) else v, "statement verdict") for v in verdicts]
