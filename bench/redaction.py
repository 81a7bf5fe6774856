"""Redaction: its worst case, its cost on ordinary text, and its effect on quality.

    python bench/redaction.py [--size 1000000] [--spans 3000] [--quality] [--data PATH]

1. Worst case: every built-in detector over every adversarial text of --size characters
   (tests/support/pii_adversarial.py), CPU time; the slowest text per detector.
2. Ordinary text: WikiEval-dev's question, contexts and answers through the Redactor with every
   detector, and the collector pipeline (decode → extract → redact → record JSON) with redaction
   off and on, the median of three alternating passes.
3. --quality: bench/quality.py (local judge) on WikiEval-dev as it is and redacted, and with a
   synthetic e-mail address and phone number put into every row (the same values in the question,
   the contexts and the answers), unredacted and redacted. A row is redacted as one record, so a
   value has one placeholder across its fields.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
sys.path.insert(0, str(REPO / "bench"))
from kafka_throughput import otlp_bodies  # noqa: E402
from pii_adversarial import adversarial  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from ragpulse.collector.extract.triple import Triple  # noqa: E402
from ragpulse.collector.otlp_decode import PROTOBUF, decode_request  # noqa: E402
from ragpulse.collector.pii_detectors import DETECTORS  # noqa: E402
from ragpulse.collector.pipeline import CollectorPipeline  # noqa: E402
from ragpulse.collector.redact import RedactionConfig, Redactor  # noqa: E402
from ragpulse.collector.telemetry import CollectorMetrics  # noqa: E402
from ragpulse.config import Config  # noqa: E402
from ragpulse.core.bus import InProcessBus  # noqa: E402

DEFAULT_DATA = Path("/work/shared/data/wikieval-dev.jsonl")
ANSWERS = ("answer", "ungrounded_answer", "poor_answer")
CONTEXTS = ("context_v1", "context_v2")


def worst_case(size: int) -> None:
    print(f"worst case, {size:,} characters of each adversarial text (CPU time):")
    print(f"{'detector':<12} {'slowest text':<22} {'s':>7} {'µs/char':>8}")
    for name, detector in DETECTORS.items():
        times = {}
        for text_name, text in adversarial(size).items():
            start = time.process_time()
            for _ in detector.spans(text):
                pass
            times[text_name] = time.process_time() - start
        slowest = max(times, key=times.__getitem__)
        print(f"{name:<12} {slowest:<22} {times[slowest]:>7.2f} {times[slowest] / size * 1e6:>8.2f}")


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ordinary_text(rows: list[dict[str, Any]]) -> None:
    redactor = Redactor(RedactionConfig(enabled=True))
    chars = sum(len(r["question"]) + len(r["answer"]) + sum(map(len, r["context_v1"])) for r in rows)
    passes = []
    for _ in range(5):
        start = time.process_time()
        for r in rows:
            redactor(Triple(r["question"], list(r["context_v1"]), r["answer"]))
        passes.append(time.process_time() - start)
    seconds = statistics.median(passes)
    print(f"\nWikiEval-dev records (question, context_v1, answer; {chars / len(rows):,.0f} characters each), "
          f"every detector: {seconds / chars * 1e9:.0f} ns/char, {seconds / len(rows) * 1e3:.2f} ms/record")


def pipeline_rate(bodies: list[bytes], spans: int, redaction: bool) -> float:
    config = Config(redaction=RedactionConfig(enabled=redaction))
    bus, metrics = InProcessBus(spans + 1), CollectorMetrics(CollectorRegistry())
    pipeline = CollectorPipeline(config.extract, config.sampling, config.redaction, bus, metrics)
    start = time.perf_counter()
    for body in bodies:
        pipeline.consume_export_request(decode_request(body, PROTOBUF), "http")
    return spans / (time.perf_counter() - start)


def pipeline(spans: int) -> None:
    bodies = otlp_bodies(spans)
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(3):
        for redaction in (False, True):
            rates[redaction].append(pipeline_rate(bodies, spans, redaction))
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(f"collector pipeline, {spans} spans (~3 KB of RAG text each): redaction off {off:,.0f} spans/s, "
          f"on {on:,.0f} spans/s ({on / off:.2f}x)")


def redact_row(redactor: Redactor, row: dict[str, Any]) -> dict[str, Any]:
    """One record's numbering across the whole row: the answers ride as attributes."""
    contexts = [*row["context_v1"], *row["context_v2"]]
    triple = redactor(Triple(row["question"], contexts, row["answer"],
                             attributes={k: row[k] for k in ANSWERS[1:]}))
    n = len(row["context_v1"])
    return {**row, "question": triple.question, "answer": triple.answer, **triple.attributes,
            "context_v1": triple.contexts[:n], "context_v2": triple.contexts[n:]}


def with_pii(i: int, row: dict[str, Any]) -> dict[str, Any]:
    email, phone = f"taro.yamada{i}@example.co.jp", f"090-{1000 + i:04d}-5678"
    out = {**row, "question": f"{row['question']} Please reply to {email}."}
    for k in CONTEXTS:
        out[k] = [f"{row[k][0]} Press contact: {email}, phone {phone}.", *row[k][1:]]
    for k in ANSWERS:
        out[k] = f"{row[k]} For details, contact {email} or call {phone}."
    return out


def agreement(path: Path) -> tuple[str, str]:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "quality.py"), "--data", str(path), "--repeat", "1"],
                         check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    means = next(line for line in lines if line.startswith("ragpulse local")).split()[2:]
    pairs = next(line for line in lines if "(pairs agreeing)" in line).split()[2:]
    return " / ".join(means), " / ".join(pairs)


def quality(rows: list[dict[str, Any]]) -> None:
    redactor = Redactor(RedactionConfig(enabled=True))
    injected = [with_pii(i, r) for i, r in enumerate(rows)]
    variants = {
        "as is": rows,
        "as is, redacted": [redact_row(redactor, r) for r in rows],
        "with PII": injected,
        "with PII, redacted": [redact_row(redactor, r) for r in injected],
    }
    changed = sum(a != b for a, b in zip(rows, variants["as is, redacted"], strict=True))
    print(f"\nagreement with the human rankings (faithfulness / answer relevancy / context relevancy), "
          f"local judge; redaction changed {changed} of {len(rows)} rows as they are:")
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in variants.items():
            path = Path(tmp) / "rows.jsonl"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
            means, pairs = agreement(path)
            print(f"  {name:<20} {means}   ({pairs})")
    print(f"  a redacted row with PII: {variants['with PII, redacted'][0]['answer'][-70:]!r}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=1_000_000, help="characters of each adversarial text")
    p.add_argument("--spans", type=int, default=3000, help="spans through the collector pipeline")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--quality", action="store_true", help="also run bench/quality.py on redacted rows")
    args = p.parse_args(argv)
    worst_case(args.size)
    rows = read_rows(args.data)
    ordinary_text(rows)
    pipeline(args.spans)
    if args.quality:
        quality(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
