"""Answering a request: the retrieval DAG over a loaded KB, its pinned sections and reports."""
