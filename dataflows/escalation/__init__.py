"""Guided escalation (seed 004): error categories, failure patterns, reports, human guidance in prompts."""
