"""Indexing a repository: reading sources, the stat cache, running the index DAG."""
