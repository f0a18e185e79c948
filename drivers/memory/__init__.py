"""Scoped memories: the store, the query driver and `cra memory`."""
