"""The metrics of the Ragas paper, each written once over the judge interface."""

from ragpulse.scorer.metrics.answer_correctness import answer_correctness
from ragpulse.scorer.metrics.answer_relevancy import answer_relevancy
from ragpulse.scorer.metrics.answer_similarity import answer_similarity
from ragpulse.scorer.metrics.base import Metric, MetricFailure
from ragpulse.scorer.metrics.context_precision import context_precision
from ragpulse.scorer.metrics.context_recall import context_recall
from ragpulse.scorer.metrics.context_relevancy import context_relevancy
from ragpulse.scorer.metrics.faithfulness import faithfulness
from ragpulse.scorer.metrics.selfcheck import selfcheck

METRICS: dict[str, Metric] = {
    "faithfulness": faithfulness,
    "answer_relevancy": answer_relevancy,
    "context_relevancy": context_relevancy,
    "context_precision": context_precision,
    "context_recall": context_recall,
    "answer_similarity": answer_similarity,
    "answer_correctness": answer_correctness,
    "selfcheck": selfcheck,
}

__all__ = ["METRICS", "Metric", "MetricFailure"]
