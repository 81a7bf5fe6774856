"""Records whose texts all differ, so that no judge reply comes from the judge's cache, and whose
claims the fault-injecting server finds supported (no counted failure hides a missing call)."""

from __future__ import annotations

from ragpulse.core.wire import Record, Sampling


def distinct_records(count: int, service: str = "svc") -> list[Record]:
    return [Record(trace_id=f"{i + 1:032x}", span_id=f"{i + 1:016x}", service=service, time_unix_nano=1,
                   question=f"Where is the Louvre ({i})?",
                   contexts=[f"The Louvre is an art museum in Paris, France. It opened in {1793 + i}."],
                   answer=f"The Louvre is in Paris. It opened in {1793 + i}.", sampling=Sampling(1.0, 1.0, "default"))
            for i in range(count)]
