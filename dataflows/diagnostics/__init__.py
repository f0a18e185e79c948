"""Diagnostics (seed 000, Stage 2A): escalation triggers on a thin handoff bundle, bounded deep retrieval."""
