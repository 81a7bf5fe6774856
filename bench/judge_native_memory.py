"""RSS of the local judge scoring the soak's records, with the tokenizer's cache as loaded (off)
and put back at the library's default (10,000 inputs): the native memory behind the soak's RSS rise.

    python bench/judge_native_memory.py [--records 12000] [--every 1000]

Each variant runs in a fresh process: one LexicalJudge scores bench/soak.py's records (each text
distinct, as in the soak) with the default metrics, one record at a time, and prints its RSS growth
over the RSS after loading the judge. tracemalloc cannot see this memory (it is the Rust allocator's,
inside `tokenizers`), which is why the soak's traced allocations stayed flat while its RSS grew.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

LIBRARY_DEFAULT_CACHE = 10_000


def rss_mb() -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def variant(records: int, every: int, cache: int | None) -> None:
    """One process's run; prints a JSON line per `every` records: records, RSS growth MB, CPU ms/record."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from soak import texts

    from ragpulse.scorer.config import ScorerConfig
    from ragpulse.scorer.judge.base import RecordText
    from ragpulse.scorer.judge.local import LexicalJudge
    from ragpulse.scorer.score import metric_functions, score_text

    judge = LexicalJudge()
    if cache is not None:
        judge._model.tokenizer.model._resize_cache(cache)  # type: ignore[attr-defined]
    metrics = metric_functions(ScorerConfig())
    base, started = rss_mb(), time.process_time()
    for n in range(records):
        q, c, a = texts(n)
        contexts = [c, f"Unrelated note {n}: the office closes at 18:00."]
        score_text(judge, metrics, RecordText(question=q, contexts=contexts, answer=a))
        if (n + 1) % every == 0:
            cpu_ms = (time.process_time() - started) / (n + 1) * 1000
            print(json.dumps({"records": n + 1, "rss_mb": rss_mb() - base, "cpu_ms": cpu_ms}), flush=True)


def run(records: int, every: int, cache: int | None) -> list[dict[str, float]]:
    args = [sys.executable, __file__, "--records", str(records), "--every", str(every), "--variant"]
    out = subprocess.run([*args, "loaded" if cache is None else str(cache)], capture_output=True, text=True,
                         check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=12_000)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant is not None:
        variant(args.records, args.every, None if args.variant == "loaded" else int(args.variant))
        return
    loaded = run(args.records, args.every, None)
    library = run(args.records, args.every, LIBRARY_DEFAULT_CACHE)
    print(f"| records scored | RSS growth, tokenizer cache off (as loaded) | with the library's cache "
          f"({LIBRARY_DEFAULT_CACHE:,}) |")
    print("| ---: | ---: | ---: |")
    for a, b in zip(loaded, library, strict=True):
        print(f"| {a['records']:,} | {a['rss_mb']:.1f} MB | {b['rss_mb']:.1f} MB |")
    print(f"CPU per record: {loaded[-1]['cpu_ms']:.2f} ms (off), {library[-1]['cpu_ms']:.2f} ms (library's cache)")


if __name__ == "__main__":
    main()
