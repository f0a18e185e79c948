"""Guided escalation: error categories, failure patterns, reports, human guidance in prompts."""
