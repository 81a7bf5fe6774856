"""The local judge's model keeps no tokenizer cache: native memory that grew a soak's RSS by ~60 MB.

The BPE model of `tokenizers` caches its first 10,000 inputs under 256 bytes and never evicts them;
that memory is the Rust allocator's, invisible to tracemalloc, so the check is the RSS of a fresh
process, against the same process with the library's default cache put back.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# 2,400 distinct ~95-byte sentences, 8 to a batch like a record's; prints the RSS growth in KiB.
ENCODE_DISTINCT = """
import sys
from pathlib import Path
from ragpulse.scorer.judge.local.model import load_static_model

def rss_kib():
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1])

model = load_static_model()
if len(sys.argv) > 1:
    model.tokenizer.model._resize_cache(int(sys.argv[1]))
model.encode([f"warm up {i}" for i in range(50)])
before = rss_kib()
for b in range(300):
    model.encode([f"Sentence {b}-{i}: the harbour lighthouse was completed on day {b * 8 + i} and stands "
                  f"38 metres tall." for i in range(8)])
print(rss_kib() - before)
"""
LIBRARY_DEFAULT_CACHE = 10_000


def rss_growth_kib(*args: str) -> int:
    out = subprocess.run([sys.executable, "-c", ENCODE_DISTINCT, *args], capture_output=True, text=True,
                         timeout=120, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.slow
def test_encoding_distinct_texts_does_not_grow_the_tokenizer_cache() -> None:
    as_loaded = rss_growth_kib()
    with_library_cache = rss_growth_kib(str(LIBRARY_DEFAULT_CACHE))
    # ~4 KiB a cached sentence with the library's cache (~10 MB here), ~0.3 MB without.
    assert with_library_cache > 5_000, f"the measurement shows no cache at all: {with_library_cache} KiB"
    assert as_loaded < with_library_cache / 5, (as_loaded, with_library_cache)
