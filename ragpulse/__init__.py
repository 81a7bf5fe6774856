"""ragpulse: live quality observability for RAG apps."""

__version__ = "0.1.0"
