"""Escalation triggers and bounded deep retrieval: `cra diagnose`."""
