"""Peak memory of the local judge on one very long record, the shape a hostile test found: an
answer of ~1,140 statements over contexts of ~3,850 sentences (about 20 KB and 69 KB of text,
inside the default extract limits).

    python bench/local_judge_memory.py

Prints the process's peak RSS before and after scoring the record with all three metrics, and
each metric's peak of Python-tracked allocations. The judge's memory grows with statements +
sentences (blocks of EMBED_BLOCK rows at a time), not with their product.
"""

from __future__ import annotations

import random
import resource
import time
import tracemalloc

from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.base import RecordText, Usage
from ragpulse.scorer.judge.local import LexicalJudge
from ragpulse.scorer.score import metric_functions


def long_record(seed: int = 1) -> RecordText:
    rng = random.Random(seed)
    words = [f"w{i}x{'abcdefghij'[i % 10]}" for i in range(20_000)]

    def sentence(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n)).capitalize() + "."

    contexts = [" ".join(sentence(2) for _ in range(50)) for _ in range(77)]
    answer = " ".join(sentence(2) for _ in range(1_140))
    return RecordText(question="What does it say?", contexts=contexts, answer=answer)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    judge = LexicalJudge()
    metrics = metric_functions(ScorerConfig())
    record = long_record()
    before = peak_rss_mb()
    started = time.perf_counter()
    for name, metric in metrics.items():
        tracemalloc.start()
        metric(judge, RecordText(record.question, record.contexts, record.answer), Usage())
        traced = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        print(f"{name:20} traced peak {traced:6.0f} MB")
    print(f"process peak RSS {before:.0f} MB before, {peak_rss_mb():.0f} MB after; "
          f"{time.perf_counter() - started:.1f} s for the three metrics")


if __name__ == "__main__":
    main()
