"""One row of a hand-written dev set in WikiEval's shape (make_ja_dev.py, make_support_dev.py): the
passage alone (context_v1) and buried among unrelated sentences (context_v2, lower context
relevancy), with a faithful, an ungrounded and a poor answer, and the poor answer's kind."""

from __future__ import annotations

import json
from pathlib import Path

# (question, context, faithful answer, ungrounded answer, poor answer, kind of poor answer)
Row = tuple[str, str, str, str, str, str]


def write(out: Path, sets: list[tuple[list[Row], list[str], str]], script: str) -> int:
    """Writes each set's rows as JSON lines; a row's noise is four of its set's noise sentences, taken
    in turn and joined with the set's separator. Returns the number of rows."""
    n = 0
    with out.open("w", encoding="utf-8") as f:
        for rows, noise_pool, sep in sets:
            for i, (question, context, answer, ungrounded, poor, kind) in enumerate(rows):
                noise = [noise_pool[(i + k) % len(noise_pool)] for k in range(4)]
                row = {
                    "question": question,
                    "answer": answer,
                    "ungrounded_answer": ungrounded,
                    "poor_answer": poor,
                    "kind": kind,
                    "context_v1": [context],
                    "context_v2": [sep.join([noise[0], noise[1], context, noise[2], noise[3]])],
                    "source": f"written by hand for ragpulse (bench/data/{script})",
                }
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
    return n
