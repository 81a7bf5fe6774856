"""The live page: served by the scorer's HTTP server next to /metrics, from the recent scores and record texts."""
