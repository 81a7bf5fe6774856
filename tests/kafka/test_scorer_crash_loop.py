"""A record that kills the scorer process comes back to every new owner of its partition. Fault
injected (tests/support/crashing_scorer.py: the process exits with 137 on one record, as on a
segfault or an OOM kill): the record is dead-lettered after scorer.max_attempts crashes instead of
crash-looping its partition forever, and every record around it is scored, none dead-lettered."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml
from crashing_scorer import CRASH_MARK
from kafka import KafkaProducer

from ragpulse.core.wire import Record, Sampling
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.topics import ensure_topics, ragpulse_topics

SCORER = Path(__file__).parents[1] / "support" / "crashing_scorer.py"
MAX_ATTEMPTS = 3


def record(i: int, answer: str) -> Record:
    return Record(trace_id=f"{i + 1:032x}", span_id=f"{i + 1:016x}", service="shop", question="東京の人口は？",
                  contexts=["東京都の人口は約1400万人で、日本の都道府県で最も多い。"], answer=answer,
                  time_unix_nano=1, sampling=Sampling(1.0, 1.0, "default"))


def test_fault_injected_a_record_that_kills_the_scorer_is_dead_lettered_after_max_attempts_crashes(
        kafka_broker, kafka_config: KafkaConfig, tmp_path: Path) -> None:
    cfg = dataclasses.replace(kafka_config, records_partitions=2)
    ensure_topics(cfg, ragpulse_topics(cfg))
    good = [record(i, f"約1400万人です。({i})") for i in range(12)]
    poison = record(99, f"約1400万人です。{CRASH_MARK}")
    producer = KafkaProducer(bootstrap_servers=cfg.bootstrap_servers)
    for r in good[:6] + [poison] + good[6:]:
        producer.send(cfg.records_topic, key=r.trace_id.encode(), value=r.to_json())
    producer.flush()
    producer.close()
    config = tmp_path / "scorer.yaml"
    config.write_text(yaml.safe_dump({
        "bus": {"kind": "kafka", "kafka": {
            "bootstrap_servers": cfg.bootstrap_servers, "records_topic": cfg.records_topic,
            "scores_topic": cfg.scores_topic, "dlq_topic": cfg.dlq_topic, "group_id": cfg.group_id,
            "records_partitions": 2, "commit_interval_ms": 100, "session_timeout_ms": 6000,
        }},
        "scorer": {"concurrency": 2, "max_attempts": MAX_ATTEMPTS},
        "prometheus": {"endpoint": "127.0.0.1:0"},
    }))

    def scored() -> set[str]:
        return {json.loads(m.value)["record_id"] for m in kafka_broker.read(cfg.scores_topic, 10**6, timeout_s=1)}

    def dead() -> list[dict]:
        return [json.loads(m.value) for m in kafka_broker.read(cfg.dlq_topic, 10**6, timeout_s=1)]

    # Restart the scorer whenever it dies, as a Deployment would, until the work is done.
    crashes = 0
    deadline = time.monotonic() + 240
    with open(tmp_path / "scorers.log", "w") as log:
        while True:
            proc = subprocess.Popen([sys.executable, str(SCORER), str(config)], stdout=log, stderr=subprocess.STDOUT)
            while proc.poll() is None and time.monotonic() < deadline:
                if len(scored()) >= len(good) and dead():
                    break
                time.sleep(0.5)
            if proc.poll() is None:
                proc.terminate()
                assert proc.wait(60) == 0
                break
            assert proc.returncode == 137, (tmp_path / "scorers.log").read_text()
            crashes += 1
            assert crashes <= 2 * (MAX_ATTEMPTS + 1), f"still crash-looping after {crashes} crashes"

    assert scored() == {r.id for r in good}
    letters = dead()
    assert len(letters) == 1, letters
    assert letters[0]["reason"] == "scorer_crashed"
    assert letters[0]["attempts"] == MAX_ATTEMPTS
    assert json.loads(letters[0]["payload"])["id"] == poison.id
    # The first crash comes unannounced; its successor takes the records up to the dead owner's
    # horizon one at a time and pins the next crashes on the record: max_attempts of them (more
    # only if a rebalance, a graceful hand-over, cleared a note in between).
    print(f"crashes: {crashes}")
    assert MAX_ATTEMPTS + 1 <= crashes <= 2 * (MAX_ATTEMPTS + 1)
