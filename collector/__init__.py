"""The collector: OTLP in, RAG records out to a bus."""
