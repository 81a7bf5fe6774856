"""The ceilings of `ragpulse up`'s bounded memories, measured by filling each to its bound, and
how long the soak's load (bench/soak.py) takes to fill them.

    python bench/soak_bounds.py [--records-per-s 5.3] [--traces-per-min 27] [--services 13]

Each memory is the product's own class at its default size, filled with values shaped like the
soak's (record ids, its English/Japanese texts, tenant service names); the size is what tracemalloc
sees allocated and still held after filling it (Python objects and numpy arrays). Fill times use
the soak's rates: records scored per second, assembled traces per minute, services after the label
cap, one new service name and one new route a minute.
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prometheus_client import CollectorRegistry  # noqa: E402
from soak import texts  # noqa: E402

from ragpulse.collector.extract.config import AssemblyConfig  # noqa: E402
from ragpulse.core.bus import MemoryBusConfig  # noqa: E402
from ragpulse.core.exposition import PrometheusConfig  # noqa: E402
from ragpulse.core.wire import Record, Sampling, scores_message  # noqa: E402
from ragpulse.scorer.config import ScorerConfig  # noqa: E402
from ragpulse.scorer.consume.dedupe import RecentRecordIds  # noqa: E402
from ragpulse.scorer.export.sinks import RecentScores  # noqa: E402
from ragpulse.scorer.judge.base import RecordText, Usage  # noqa: E402
from ragpulse.scorer.judge.local import LexicalJudge  # noqa: E402
from ragpulse.scorer.judge.local.judge import CACHE_SIZE, WORD_CACHE_SIZE  # noqa: E402
from ragpulse.scorer.observer import ScoredRecord  # noqa: E402
from ragpulse.scorer.score import metric_functions, score_text  # noqa: E402
from ragpulse.scorer.web.history import History  # noqa: E402
from ragpulse.scorer.web.page import PageConfig  # noqa: E402
from ragpulse.scorer.web.record_texts import RecentRecordTexts  # noqa: E402


def held_bytes(fill: Callable[[], object]) -> int:
    """Traced bytes still allocated after `fill()` while its result is alive."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    kept = fill()
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - before
    del kept
    return size


def record(n: int, service: str = "shop") -> Record:
    q, c, a = texts(n)
    return Record(trace_id=f"{n:032x}", span_id=f"{n:016x}", service=service, question=q,
                  contexts=[c, f"Unrelated note {n}: the office closes at 18:00."], answer=a,
                  time_unix_nano=n, sampling=Sampling(1.0, 1.0, "default"), route="/faq", model="gpt-4o-mini")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records-per-s", type=float, default=5.3, help="records scored per second")
    parser.add_argument("--traces-per-min", type=float, default=27.0, help="multi-span traces assembled a minute")
    parser.add_argument("--services", type=int, default=13, help="services after the label cap")
    args = parser.parse_args()
    per_min = args.records_per_s * 60

    judge = LexicalJudge()
    metrics = metric_functions(ScorerConfig())
    scored = [(r, score_text(judge, metrics, RecordText(r.question, r.contexts, r.answer)))
              for r in (record(n) for n in range(200))]
    tracemalloc.start()
    rows: list[tuple[str, str, int, str]] = []

    window = MemoryBusConfig().dedupe_window

    def dedupe() -> object:
        ids = RecentRecordIds(window)
        for n in range(window):
            ids.seen(record(n).id)
        return ids
    rows.append(("scorer: redelivery window (scorer/consume/dedupe.py)", f"bus.memory.dedupe_window {window:,} ids",
                 held_bytes(dedupe), f"{window / per_min / 60:.1f} h"))

    fresh = LexicalJudge()

    def text_cache() -> object:
        for n in range(0, CACHE_SIZE, 8):
            fresh.embed([s for m in range(n, n + 8) for s in texts(10_000 + m)[:2]], Usage())
        return fresh
    rows.append(("local judge: text embeddings (judge.py)", f"CACHE_SIZE {CACHE_SIZE:,} texts",
                 held_bytes(text_cache), "~2 min (4 new texts a record)"))

    def word_cache() -> object:
        words = [f"w{n}x{'abcdefghij'[n % 10]}" for n in range(WORD_CACHE_SIZE)]
        for i in range(0, len(words), 256):
            fresh._word_vectors(words[i:i + 256])
        return fresh
    rows.append(("local judge: word vectors (judge.py)", f"WORD_CACHE_SIZE {WORD_CACHE_SIZE:,} words",
                 held_bytes(word_cache), "never at the soak's vocabulary (28 words)"))

    max_traces = AssemblyConfig().max_traces

    def assembled_ids() -> object:
        # The shape of TraceAssembler._done: trace ids (16 bytes) in arrival order.
        done: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        for n in range(max_traces):
            done[n.to_bytes(16, "big")] = None
        return done
    rows.append(("collector: assembled trace ids (collector/assemble.py)",
                 f"receiver.assembly.max_traces {max_traces:,}", held_bytes(assembled_ids),
                 f"{max_traces / args.traces_per_min / 60:.1f} h"))

    def history() -> object:
        minute = [0.0]
        h = History(CollectorRegistry(), ScorerConfig().bad_event_threshold, clock=lambda: minute[0] * 60)
        for m in range(h.minutes + 1):
            minute[0] = m
            for s in range(args.services):
                for r, outcomes in scored[(m * args.services + s) % 200:][:1]:
                    rec = Record(**{**r.__dict__, "service": f"svc-{s}", "trace_id": f"{m:016x}{s:016x}"})
                    h.on_scores(ScoredRecord(rec, outcomes, 0.01, "local"))
        return h
    rows.append(("scorer: live page minutes and worst records (scorer/web/history.py)",
                 f"360 minutes x {args.services} services; 200 records a service", held_bytes(history), "6 h"))

    page = PageConfig()

    def page_texts() -> object:
        kept = RecentRecordTexts(page.text_records, page.text_bytes)
        for n in range(page.text_records):
            kept.on_scores(ScoredRecord(record(20_000 + n), scored[n % len(scored)][1], 0.01, "local"))
        return kept
    rows.append(("live page: record texts (scorer/web/record_texts.py)",
                 f"page.text_records {page.text_records}, text_bytes {page.text_bytes // 2**20} MiB",
                 held_bytes(page_texts), f"{page.text_records / per_min:.1f} min"))

    recent = ScorerConfig().recent_scores

    def recent_scores() -> object:
        # Scored by `fresh`, whose text cache is full: its evictions keep the cache at its size.
        sink = RecentScores(recent)
        for n in range(recent):
            r = record(30_000 + n)
            outcomes = score_text(fresh, metrics, RecordText(r.question, r.contexts, r.answer))
            message = scores_message(r, {k: o.to_dict() for k, o in outcomes.items()},
                                     {"name": "local", "model": judge.model}, {}, 0.01)
            sink.publish(r.id, message)
        return sink
    rows.append(("live page: scores messages (scorer/export/sinks.py)", f"scorer.recent_scores {recent}",
                 held_bytes(recent_scores), f"{recent / per_min:.1f} min"))

    bounds = PrometheusConfig(label_cap=12).label_bounds()

    def collapsed_names() -> object:
        for k in range(20_000):  # both guards remember at most 10,000 collapsed values
            bounds.service(f"tenant-{k:03d}")
            bounds.route(f"/tenant/{k}")
        return bounds
    rows.append(("labels: collapsed values counted (ragpulse/core/labels.py)", "10,000 values a label",
                 held_bytes(collapsed_names), "6.9 days (a new service and route a minute)"))

    print("| memory | bound | ceiling | fill time at the soak's load |")
    print("| --- | --- | ---: | --- |")
    for name, bound, size, fill in rows:
        print(f"| {name} | {bound} | {size / 2**20:.1f} MB | {fill} |")
    print(f"total: {sum(r[2] for r in rows) / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
