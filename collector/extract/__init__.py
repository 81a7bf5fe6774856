"""Span conventions: each module turns one span's attributes into a RAG triple, or says why not."""
