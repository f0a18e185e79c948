"""The scale benchmark's own pieces: its generated trees index as the languages they claim, and the
growth exponent it reports is the slope of the log-log fit."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_the_added_function_of_each_language_parses_as_one_more_symbol_and_the_edits_restore_the_tree(
    tmp_path, monkeypatch
):
    from cra.drivers.bench import scale

    root = generated_tree(8, cache=tmp_path / "trees")
    kb = tmp_path / "kb"
    before = index_repository(root, kb, history=0)
    for path in sorted(root.rglob("*.*")):
        original = path.read_text()
        path.write_text(original + scale.added_function(path, "bench_edit_1"))
        stats = index_repository(root, kb, history=0)
        path.write_text(original)
        assert not stats["parse_errors"], path.name
        assert stats["n_symbols"] > before["n_symbols"], f"{path.name}: the added function is no new symbol"
    texts = {p: p.read_bytes() for p in root.rglob("*.*")}
    commands = []
    monkeypatch.setattr(scale, "measured", lambda argv: (commands.append(argv), (0.5, 100.0, None))[1])
    out = scale.measure_edits(root, kb, runs=2)
    edits = ("touch", "add_function", "delete", "add_file")
    assert set(out) == {f"{e}_{m}" for e in edits for m in ("s", "peak_mb")}
    assert len(commands) == 4 * 2 * 2 and all(c[1] == "index" for c in commands)
    assert {p: p.read_bytes() for p in root.rglob("*.*")} == texts


def test_the_added_function_is_a_new_symbol_in_rust_too_and_other_files_are_refused(tmp_path):
    from cra.drivers.bench import scale

    root = tmp_path / "crate"
    (root / "src").mkdir(parents=True)
    lib = root / "src" / "lib.rs"
    lib.write_text("pub fn first(value: i32) -> i32 { value }\n")
    before = index_repository(root, tmp_path / "kb", history=0)
    lib.write_text(lib.read_text() + scale.added_function(lib, "bench_edit_1"))
    after = index_repository(root, tmp_path / "kb", history=0)
    assert after["n_symbols"] == before["n_symbols"] + 1 and not after["parse_errors"]
    with pytest.raises(ValueError, match="pick a file ending in .py"):
        scale.added_function(root / "README.md", "x")
