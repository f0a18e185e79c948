"""The knowledge-base store: where a KB lives, its versions, tables and word caches."""
