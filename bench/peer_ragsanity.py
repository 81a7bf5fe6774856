"""Runs ragsanity 0.3.0 inside the benchmark's own venv (bench/install_peer_env.sh): one JSON object
per line on stdin ({question, contexts, answer}), one per line on stdout ({faithfulness, relevancy}),
then a last line {"seconds": ...}: the time spent in ragsanity's evaluate() alone, so that process
start and pipes do not count against its speed.

Kept free of ragpulse imports: this file runs under the peer's interpreter, not ragpulse's.
"""

import json
import sys
import time

from ragsanity import evaluate


def main() -> int:
    spent = 0.0
    for line in sys.stdin:
        if not line.strip():
            continue
        row = json.loads(line)
        start = time.perf_counter()
        result = evaluate(
            question=row["question"],
            contexts=row["contexts"],
            answer=row["answer"],
            metrics=["faithfulness", "relevancy"],
        )
        spent += time.perf_counter() - start
        print(json.dumps({"faithfulness": result.faithfulness, "relevancy": result.relevancy}))
    print(json.dumps({"seconds": spent}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
