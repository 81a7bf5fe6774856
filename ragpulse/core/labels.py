"""Bounded label values for Prometheus: span values (service, route, model) pass through here."""

from __future__ import annotations

import threading


class LabelGuard:
    """Bounds the label values that come from spans: an allow-list if configured, otherwise the
    first `cap` distinct values; everything else becomes `other` so a noisy app cannot explode
    Prometheus's series count."""

    def __init__(self, allow: tuple[str, ...] = (), cap: int = 50) -> None:
        self._allow = frozenset(allow)
        self._cap = cap
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        value = value or "unknown"
        if self._allow:
            return value if value in self._allow else "other"
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) < self._cap:
                self._seen.add(value)
                return value
        return "other"
