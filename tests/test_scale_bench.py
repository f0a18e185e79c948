"""The scale benchmark's own pieces: its generated trees index as the languages they claim, and the
growth exponent it reports is the slope of the log-log fit."""

from __future__ import annotations

import numpy as np

from cra.drivers.bench.scale import LANGUAGES, generated_tree, growth_exponent
from cra.drivers.index.indexer import index_repository


def test_generated_tree_is_deterministic_and_every_module_parses_with_symbols(tmp_path):
    root = generated_tree(40, cache=tmp_path / "a")
    again = generated_tree(40, cache=tmp_path / "b")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.*"))
    assert len(files) == 40 and files == sorted(p.relative_to(again).as_posix() for p in again.rglob("*.*"))
    assert all((root / f).read_text() == (again / f).read_text() for f in files)
    stats = index_repository(root, tmp_path / "kb", history=0)
    expected = {"py": "python", "go": "go", "ts": "typescript", "java": "java"}
    assert set(stats["files_by_language"]) == {expected[ext] for ext, _ in LANGUAGES}
    assert not stats["parse_errors"] and stats["n_symbols"] >= 40 * 6


def test_growth_exponent_is_the_log_log_slope():
    files = np.array([1_000, 5_000, 20_000, 100_000])
    assert abs(growth_exponent(files, 3.0 * files**1.0) - 1.0) < 1e-9
    assert abs(growth_exponent(files, 0.5 * files**0.25) - 0.25) < 1e-9
