"""Scores out: Prometheus /metrics and its HTTP server, OTLP evaluations, the scores and dead-letter sinks."""
