"""What grows in a soak: compares the tracemalloc snapshots that `bench/soak.py --tracemalloc N
--snapshots DIR` wrote, and prints the totals and the top growing allocation sites.

    python bench/soak_tracemalloc.py DIR [--at 5 15 25] [--top 20]

--at: uptimes in minutes; the snapshot nearest each is used (default: all of them). A site is the
innermost frame of the traceback that is ragpulse's own code (ragpulse/, collector/, scorer/),
shown with the frame that allocated (a library's, or the same); allocations with no ragpulse frame
in their traceback are grouped by the innermost frame. Rows are ranked by growth from the first
to the last snapshot used; sizes in KiB.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = tuple(str(REPO / d) + "/" for d in ("ragpulse", "collector", "scorer"))
IGNORED = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
           tracemalloc.Filter(False, str(REPO / "bench" / "tracemalloc_site" / "*")))


def short(filename: str) -> str:
    if filename.startswith(str(REPO) + "/"):
        return filename[len(str(REPO)) + 1:]
    return filename.split("site-packages/")[-1].split("/lib/python3")[-1].lstrip("/")


def site(traceback: tracemalloc.Traceback) -> str:
    frames = list(traceback)  # oldest first
    innermost = frames[-1]
    own = next((f for f in reversed(frames) if f.filename.startswith(PRODUCT)), None)
    where = f"{short(innermost.filename)}:{innermost.lineno}"
    if own is None or own is innermost:
        return where
    return f"{short(own.filename)}:{own.lineno} ← {where}"


def sites(path: Path) -> dict[str, tuple[int, int]]:
    snapshot = tracemalloc.Snapshot.load(str(path)).filter_traces(IGNORED)
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for stat in snapshot.statistics("traceback"):
        row = out[site(stat.traceback)]
        row[0] += stat.size
        row[1] += stat.count
    return {k: (v[0], v[1]) for k, v in out.items()}


def pick(snapshots: list[Path], minutes: list[float] | None) -> list[Path]:
    if not minutes:
        return snapshots
    uptime = {p: int(p.stem.split("-")[1]) / 60 for p in snapshots}
    return sorted({min(snapshots, key=lambda p: abs(uptime[p] - m)) for m in minutes})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--at", type=float, nargs="*", help="uptimes in minutes")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()

    # Untraced: what malloc holds (heap in use + mmapped) less what tracemalloc sees and its own
    # tables. Python's small objects live in pymalloc arenas outside malloc, so the level is off by
    # a constant; its change over time is native memory that tracemalloc cannot see (C, Rust).
    print("| uptime min | VmRSS MB | traced MB | tracemalloc's own MB | glibc heap in use MB | "
          "glibc heap free MB | mmapped MB | untraced MB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    mb = 1024 * 1024
    for line in (args.folder / "totals.jsonl").read_text().splitlines():
        t = json.loads(line)
        held = t.get("heap_in_use", 0) + t.get("mmapped", 0)
        untraced = held - t["traced"] - t["tracemalloc_overhead"]
        print(f"| {t['uptime_s'] / 60:.0f} | {t['rss_kb'] / 1024:.1f} | {t['traced'] / mb:.1f} | "
              f"{t['tracemalloc_overhead'] / mb:.1f} | {t.get('heap_in_use', 0) / mb:.1f} | "
              f"{t.get('heap_free', 0) / mb:.1f} | {t.get('mmapped', 0) / mb:.1f} | "
              f"{untraced / mb if held else float('nan'):.1f} |")

    chosen = pick(sorted(args.folder.glob("snapshot-*.pickle")), args.at)
    if len(chosen) < 2:
        raise SystemExit("need two snapshots or more")
    tables = [sites(p) for p in chosen]
    labels = [f"{int(p.stem.split('-')[1]) / 60:.0f} min" for p in chosen]
    span_min = (int(chosen[-1].stem.split("-")[1]) - int(chosen[0].stem.split("-")[1])) / 60
    first, last = tables[0], tables[-1]
    growth = {k: last.get(k, (0, 0))[0] - first.get(k, (0, 0))[0] for k in set(first) | set(last)}
    total = sum(growth.values())
    print(f"\nTraced growth {labels[0]} → {labels[-1]}: {total / 1024:+.0f} KiB "
          f"({total / 1024 / span_min:+.1f} KiB/min); "
          f"top {args.top} sites (KiB, and blocks, at each snapshot):\n")
    print("| site | " + " | ".join(labels) + " | growth KiB/min |")
    print("| --- | " + " | ".join("---:" for _ in labels) + " | ---: |")
    for k in sorted(growth, key=lambda k: -growth[k])[:args.top]:
        cells = [f"{t.get(k, (0, 0))[0] / 1024:.0f} ({t.get(k, (0, 0))[1]})" for t in tables]
        print(f"| `{k}` | " + " | ".join(cells) + f" | {growth[k] / 1024 / span_min:+.1f} |")


if __name__ == "__main__":
    main()
