"""The scorer: RAG records in, Ragas metrics out to Prometheus and the scores topic."""
