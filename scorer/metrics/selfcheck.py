"""SelfCheck consistency (SelfCheckGPT, SelfCheck-Prompt): a hallucinated sentence is one that
other answers to the same question do not repeat.

    score = mean over the answer's sentences i of (mean over samples j of support(i | sample j))

Support is the judge's statement check with the sample as the only evidence, all sentences of one
sample in one call (the openai judge: one verify call per sample; the local judge: its lexical
support). Higher is more consistent (SelfCheckGPT's inconsistency score, turned round as Ragas's
metrics are). The detail names the weakest sentence and its score. Samples come from the record
(rag.samples) or from a generator (scorer.selfcheck.generator); too few is a counted failure.
"""

from __future__ import annotations

from typing import Any, Protocol

from ragpulse.scorer.judge.base import Judge, JudgeError, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure
from ragpulse.scorer.metrics.reference import support
from ragpulse.scorer.sentences import split_sentences


class SampleSource(Protocol):
    def samples(self, rec: RecordText, usage: Usage) -> list[str]: ...


def selfcheck(
    judge: Judge, rec: RecordText, usage: Usage, source: SampleSource | None = None, min_samples: int = 2
) -> tuple[float, dict[str, Any]]:
    sentences = split_sentences(rec.answer)
    if not sentences:
        raise MetricFailure("empty_answer", "selfcheck needs an answer")
    samples = [s for s in _samples(rec, usage, source) if s.strip()]
    if len(samples) < min_samples:
        raise MetricFailure("too_few_samples", f"{len(samples)} samples, at least {min_samples} needed")
    by_sample = [support(judge, rec.question, [sample], sentences, usage) for sample in samples]
    per_sentence = [sum(col) / len(col) for col in zip(*by_sample, strict=True)]
    weakest = min(range(len(sentences)), key=per_sentence.__getitem__)
    scored = [{"sentence": s, "score": round(v, 3)} for s, v in zip(sentences, per_sentence, strict=True)]
    detail = {"samples": len(samples), "min_sentence_score": round(per_sentence[weakest], 3),
              "weakest_sentence": sentences[weakest], "sentences": scored}
    return sum(per_sentence) / len(per_sentence), detail


def _samples(rec: RecordText, usage: Usage, source: SampleSource | None) -> list[str]:
    if rec.samples:
        return rec.samples
    if source is None:
        raise MetricFailure("no_samples", "the span has no rag.samples and scorer.selfcheck.generator is unset")
    try:
        return source.samples(rec, usage)
    except JudgeError as e:
        # Apart from the judge's own failures: the generator is another endpoint.
        raise MetricFailure(f"generator_{e.reason}", str(e)) from None
