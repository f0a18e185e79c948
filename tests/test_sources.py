"""The walk's own stats (`source_paths(with_stats=True)`): the stat of every file it keeps, and of nothing else."""

from __future__ import annotations

import os
from pathlib import Path

from cra.drivers.index.sources import source_paths
from cra.drivers.kb.stat_cache import file_stats


def _tree(root: Path) -> Path:
    files = {
        ".gitignore": "build/\n*.log\n",
        ".cra.toml": '[index]\nexclude = ["vendor/**"]\n',
        "app/main.py": "print(1)\n",
        "app/util/helpers.py": "def f():\n    return 2\n",
        "build/out.py": "generated = 1\n",
        "app/debug.log": "noise\n",
        "vendor/lib.py": "x = 1\n",
        "node_modules/pkg/index.js": "module.exports = 1\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    os.symlink(root / "app/main.py", root / "app/link.py")
    return root


def test_the_walk_stats_exactly_the_files_it_keeps_as_a_stat_pass_would(tmp_path):
    root = _tree(tmp_path / "repo")
    walk = source_paths(root, with_stats=True)
    assert sorted(walk.paths) == [".cra.toml", ".gitignore", "app/main.py", "app/util/helpers.py"]
    assert walk.stats == file_stats(root, walk.paths)  # (no ignored, excluded, noise or symlinked file)
    assert source_paths(root).stats is None  # (not asked: no stat taken)


def test_a_file_changed_after_a_walk_has_another_stat_in_the_next_walk(tmp_path):
    root = _tree(tmp_path / "repo")
    before = source_paths(root, with_stats=True).stats["app/main.py"]
    (root / "app/main.py").write_text("print('a longer line')\n")
    after = source_paths(root, with_stats=True).stats["app/main.py"]
    assert after != before and after == file_stats(root, ["app/main.py"])["app/main.py"]
