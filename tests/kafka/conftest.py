"""Kafka tests share one real broker (tests/kafka_broker.py)."""

import sys
from pathlib import Path

# tests/ is not a package; put it on the path so the shared broker fixture module imports the
# same way here as from tests/conftest.py (which may list it in pytest_plugins).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_broker import kafka_broker  # noqa: E402, F401
