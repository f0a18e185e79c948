"""Benchmarks: run from the repository (`python -m cra.drivers.bench.<name>`), not installed with the wheel."""
