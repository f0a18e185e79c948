"""Research tooling (case mining, signal collection, learners, tuning, screens, snapshots): run from the
repository (`python -m cra.drivers.research.<tool>`), not installed with the wheel."""
