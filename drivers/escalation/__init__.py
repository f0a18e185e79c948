"""Guided escalation: attempts, reports, guidance and `cra attempt/report/guide`."""
