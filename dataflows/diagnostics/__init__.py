"""Diagnostics: escalation triggers on a thin handoff bundle (an agent's failure report), bounded deep retrieval."""
