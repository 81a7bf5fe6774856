"""Opt-in memory diagnostics for `bench/soak.py --tracemalloc N`, outside the product.

bench/soak.py puts this folder first on the ragpulse process's PYTHONPATH, so Python imports this
module at start-up, before ragpulse.cli runs. It does nothing unless SOAK_TRACEMALLOC_DIR names a
folder (not a RAGPULSE_ variable: those are ragpulse's configuration); then tracemalloc, started
by PYTHONTRACEMALLOC=N, is snapshotted every SOAK_TRACEMALLOC_EVERY_S seconds into that folder,
with a line of totals in <folder>/totals.jsonl: what tracemalloc traces, its own overhead, VmRSS,
and glibc's heap (mallinfo2: in use vs free inside the heap, to tell a leak from fragmentation).
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time
import tracemalloc
from pathlib import Path


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo() -> dict[str, int]:
    try:
        call = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):  # not glibc >= 2.33: the totals go without the heap's
        return {}
    call.restype = _MallInfo2
    info = call()
    return {"heap_in_use": info.uordblks, "heap_free": info.fordblks, "heap_arena": info.arena,
            "mmapped": info.hblkhd}


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _snapshots(folder: Path, every_s: float) -> None:
    started = time.monotonic()
    k = 1
    while True:
        time.sleep(max(0.0, started + k * every_s - time.monotonic()))
        uptime = round(time.monotonic() - started)
        traced, peak = tracemalloc.get_traced_memory()
        totals = {"uptime_s": uptime, "rss_kb": _rss_kb(), "traced": traced, "traced_peak": peak,
                  "tracemalloc_overhead": tracemalloc.get_tracemalloc_memory(), **_mallinfo()}
        # Measured before the snapshot: taking one allocates as much again for a while.
        tracemalloc.take_snapshot().dump(str(folder / f"snapshot-{uptime:06d}.pickle"))
        with open(folder / "totals.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps(totals) + "\n")
        k += 1


def _start() -> None:
    folder = os.environ.get("SOAK_TRACEMALLOC_DIR")
    if not folder or not tracemalloc.is_tracing():
        return
    # Children (none expected from `ragpulse up`) must not write into the same folder.
    os.environ.pop("SOAK_TRACEMALLOC_DIR")
    every_s = float(os.environ.pop("SOAK_TRACEMALLOC_EVERY_S", "300"))
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    threading.Thread(target=_snapshots, args=(path, every_s), name="soak-tracemalloc", daemon=True).start()


_start()
