"""Python namespace packages (PEP 420: directories without __init__.py) resolve their imports as Python does, with
the repository root and src/ as roots: the same import edges as once the __init__.py files exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from cra.drivers.common.tokens import count_tokens
from cra.drivers.index.indexer import index_frames

FILES = {
    "a/main.py": "from b import helper\nimport b.tools\nfrom lib.deep.mod import thing\nimport os\nfrom b import missing\n\n\n"
    "def run():\n    return helper.compute(thing())\n",
    "b/helper.py": "from .tools import scale\n\n\ndef compute(value):\n    return scale(value)\n",
    "b/tools.py": "def scale(value):\n    return value * 2\n",
    "src/lib/deep/mod.py": "from ..shared import base\n\n\ndef thing():\n    return base()\n",
    "src/lib/shared.py": "def base():\n    return 1\n",
}
EDGES = {
    ("a/main.py", "b/helper.py"),  # from b import helper
    ("a/main.py", "b/tools.py"),  # import b.tools
    ("a/main.py", "src/lib/deep/mod.py"),  # from lib.deep.mod import thing: src/ is a root
    ("b/helper.py", "b/tools.py"),  # from .tools import scale, in a namespace package
    ("src/lib/deep/mod.py", "src/lib/shared.py"),  # from ..shared import base
}
PACKAGES = ("a", "b", "src/lib", "src/lib/deep")


def _tables(root: Path, with_init: bool) -> dict:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if with_init:
        for package in PACKAGES:
            (root / package / "__init__.py").write_text("")
    return index_frames(root, history=0, count_tokens=count_tokens)[0]


def _edges(tables: dict) -> set[tuple[str, str]]:
    path = dict(zip(tables["files"]["file_id"], tables["files"]["path"]))
    edges = tables["edges"][tables["edges"]["kind"] == "import"]
    return {(path[s], path[d]) for s, d in zip(edges["src_file_id"], edges["dst_file_id"])}


@pytest.mark.parametrize("with_init", [False, True], ids=["namespace packages", "regular packages"])
def test_imports_resolve_with_and_without_init_files(tmp_path, with_init):
    package_itself = {("a/main.py", "b/__init__.py")} if with_init else set()  # from b import missing: a name of b
    assert _edges(_tables(tmp_path, with_init)) == EDGES | package_itself


def test_a_call_through_a_namespace_package_import_is_a_symbol_edge(tmp_path):
    tables = _tables(tmp_path, with_init=False)
    name = dict(zip(tables["symbols"]["symbol_id"], tables["symbols"]["qualified_name"]))
    edges = tables["symbol_edges"]
    assert ("run", "compute") in {(name[s], name[d]) for s, d in zip(edges["src_symbol_id"], edges["dst_symbol_id"])}


def test_a_package_dir_mapping_of_pyproject_resolves_imports_of_the_mapped_name(tmp_path):
    """setuptools' `package-dir` serves `acme.core` from core/ (as this project serves cra.dataflows from dataflows/):
    imports of the mapped name reach the files, and a name nothing maps stays unresolved."""
    files = {
        "pyproject.toml": '[tool.setuptools]\npackage-dir = {"acme.core" = "core", "acme.cli" = "tools/cli"}\n',
        "core/__init__.py": "",
        "core/helper.py": "def compute(value):\n    return value\n",
        "tools/cli/main.py": "from acme.core.helper import compute\nimport acme.core\nfrom other.core import x\n\n\n"
        "def run():\n    return compute(1)\n",
        "tests/test_main.py": "from acme.cli.main import run\n\n\ndef test_run():\n    assert run() == 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    tables = index_frames(tmp_path, history=0, count_tokens=count_tokens)[0]
    assert _edges(tables) >= {
        ("tools/cli/main.py", "core/helper.py"),
        ("tools/cli/main.py", "core/__init__.py"),
        ("tests/test_main.py", "tools/cli/main.py"),
    }
    assert not {dst for src, dst in _edges(tables) if src == "tools/cli/main.py"} - {
        "core/helper.py",
        "core/__init__.py",
    }
