"""Fuzzing the OTLP receivers (HTTP protobuf and JSON, gRPC; traces and logs) over real sockets with cases grown from
what real exporters send (tests/support/otlp_fuzz.py says how): no 5xx, no connection closed
without an answer, no hang, bounded memory. A few hundred cases with a fixed seed here; bench/fuzz.py
runs 100,000 and more."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otlp_fuzz import Seeds, check_grpc, check_http, grpc_case, http_case, rss_mb, run_grpc, run_http
from test_receiver_limits import Receivers, start_receivers

from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.core.endpoints import parse_endpoint

# Short timeouts so a case that stops short of its length costs little; a case's own timeout is
# well above them: only a real hang exceeds it.
CONFIG = ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", max_request_bytes=1024 * 1024,
                        read_timeout_s=0.3, idle_timeout_s=1.0)
CASE_TIMEOUT_S = 5.0
SEEDS = Seeds()
LOG_SEEDS = Seeds(logs=True)
FUZZ = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def receivers() -> Iterator[Receivers]:
    r = start_receivers(CONFIG)
    # Valid cases reach the bus: empty it as they come so it never pushes back (503 is not a finding).
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            for delivery in r.bus.poll(1000, 0.1):
                r.bus.commit(delivery)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    yield r
    stop.set()
    drainer.join()
    for receiver in r.parts.receivers:
        receiver.stop()


@pytest.mark.slow  # hundreds of cases over real sockets
@given(st.randoms(use_true_random=False), st.sampled_from([SEEDS, SEEDS, LOG_SEEDS]))
@FUZZ
def test_http_fuzz(receivers: Receivers, rng: random.Random, seeds: Seeds) -> None:
    case = http_case(rng, seeds)
    finding = check_http(case, run_http(parse_endpoint(receivers.http, "http"), case, CASE_TIMEOUT_S))
    assert finding is None, f"{finding}: {case.describe()}"


@given(st.randoms(use_true_random=False), st.sampled_from([SEEDS, SEEDS, LOG_SEEDS]))
@FUZZ
def test_grpc_fuzz(receivers: Receivers, channel: grpc.Channel, rng: random.Random, seeds: Seeds) -> None:
    case = grpc_case(rng, seeds)
    finding = check_grpc(case, run_grpc(channel, case, CASE_TIMEOUT_S))
    assert finding is None, f"{finding}: {case.describe()}"


@pytest.fixture(scope="module")
def channel(receivers: Receivers) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(receivers.grpc) as c:
        yield c


@pytest.mark.slow  # thousands of cases over real sockets
def test_memory_stays_bounded_over_repeated_cases(receivers: Receivers) -> None:
    """The same 300 cases twice: the second round must not grow the process much (no leak per case)."""
    address = parse_endpoint(receivers.http, "http")
    cases = [http_case(random.Random(i), SEEDS) for i in range(300)]
    for case in cases:
        run_http(address, case, CASE_TIMEOUT_S)
    before = rss_mb()
    for case in cases:
        run_http(address, case, CASE_TIMEOUT_S)
    assert rss_mb() - before < 30
