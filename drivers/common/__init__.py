"""Helpers every capability shares: errors, locations, locks, atomic output, tokens, shipped data."""
