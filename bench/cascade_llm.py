"""One end-to-end run of the judge cascade with the real openai judge: a llama.cpp server on
127.0.0.1 (deploy/llm/install.sh), the real scorer (build_scorer with scorer.cascade on), a small
slice of RAGTruth dev QA records through the in-process bus.

    RAGPULSE_LLM_VENV=~/.cache/ragpulse/venv-llm python bench/cascade_llm.py [--records 12] [--share 0.25]

Prints, per record, its label, the offline faithfulness, π, the LLM's faithfulness where it was
asked and the judge the live page shows, then the exported estimate. A check of the plumbing on a
real endpoint, not a measurement of quality: a 1.5B model on a CPU, a dozen records.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from ragpulse.app import build_scorer
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.estimate.config import CascadeConfig
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.observer import ScoredRecord

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from llm_server import MODEL_ALIAS, available, llama_server  # noqa: E402

DATA = Path("/work/shared/data/ragtruth-dev.jsonl")


class Capture:
    """An extra observer: what the cascade knew of each record."""

    def __init__(self) -> None:
        self.seen: dict[str, ScoredRecord] = {}
        self._lock = threading.Lock()

    def on_scores(self, scored: ScoredRecord) -> None:
        with self._lock:
            self.seen[scored.record.id] = scored


def _cell(score: float | None) -> str:
    return "—" if score is None else f"{score:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=12)
    parser.add_argument("--share", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    if not available():
        sys.exit("no LLM server: run deploy/llm/install.sh or set RAGPULSE_LLM_VENV")
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    # The shortest QA records: the judge's time grows with the prompt.
    rows = sorted((r for r in rows if r["task_type"] == "QA"), key=lambda r: len(r["contexts"][0]))[:args.records]
    rng = random.Random(args.seed)
    with llama_server() as base_url:
        config = Config()
        config.scorer.judge = "openai"
        config.scorer.openai = OpenAIJudgeConfig(model=MODEL_ALIAS, base_url=base_url, api_key="unused",
                                                 timeout_s=900.0, max_retries=1)
        config.scorer.metrics = ["faithfulness"]
        config.scorer.cascade = CascadeConfig(enabled=True, share=args.share)
        bus, registry = InProcessBus(100), CollectorRegistry()
        parts = build_scorer(config, bus, registry)
        capture = Capture()
        parts.observers.append(capture)  # the worker holds this list
        labels: dict[str, int] = {}
        for i, row in enumerate(rows):
            record = Record(trace_id=f"{rng.getrandbits(128):032x}", span_id=f"{i + 1:016x}", service="ragtruth-qa",
                            question=row["question"], contexts=row["contexts"], answer=row["answer"],
                            time_unix_nano=time.time_ns(), sampling=Sampling(1.0, 1.0, "default"))
            labels[record.id] = int(row["hallucinated"])
            bus.publish(record.trace_id.encode(), record.to_json())
        started = time.perf_counter()
        parts.worker.start()
        drained = bus.drained(3600)
        parts.worker.stop(timeout_s=900)
        elapsed = time.perf_counter() - started
    print(f"{len(rows)} records, drained={drained}, {elapsed:.0f} s; model {MODEL_ALIAS}\n")
    print("| record | hallucinated | offline | π | LLM | shown |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    messages = {m["record_id"]: m for m in parts.scores.snapshot()}
    for record_id, scored in capture.seen.items():
        verdict = scored.cascade
        assert verdict is not None
        offline, llm = (verdict.offline.get("faithfulness"), (verdict.judged or {}).get("faithfulness"))
        # "—": the judge failed on it (counted in metric failures below), never a number made up.
        print(f"| {record_id[:8]}… | {labels[record_id]} | {_cell(offline)} | {verdict.inclusion:.3f} | "
              f"{_cell(llm) if verdict.judged is not None else ''} | {messages[record_id]['judge']['name']} |")
    sample = {"service": "ragtruth-qa", "metric": "faithfulness"}
    print()
    for suffix in ("", "_lower", "_upper", "_judged_samples", "_effective_samples", "_offline_weight"):
        name = f"ragpulse_quality_estimate{suffix}"
        print(f"{name} = {registry.get_sample_value(name, sample)}")
    for outcome in ("judged", "offline_only", "no_budget"):
        value = registry.get_sample_value("ragpulse_cascade_records_total", {"outcome": outcome})
        print(f"ragpulse_cascade_records_total{{outcome={outcome}}} = {value}")
    failures = {s.labels["reason"]: s.value for f in registry.collect() if f.name == "ragpulse_metric_failures"
                for s in f.samples if s.name.endswith("_total")}
    print(f"metric failures: {failures or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
