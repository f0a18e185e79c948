"""`cra dag`: the index, retrieval and evaluation DAGs drawn as SVG, or one line naming what to install."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from cra.drivers.cli import dag
from cra.drivers.cli.main import main

HAS_GRAPHVIZ = shutil.which("dot") is not None and importlib.util.find_spec("graphviz") is not None


@pytest.mark.skipif(
    not HAS_GRAPHVIZ, reason="Graphviz is not installed here (apt-get install graphviz; pip install graphviz)"
)
def test_dag_writes_the_three_dags_as_svg_naming_their_nodes(tmp_path, capsys):
    out = tmp_path / "tmp"
    assert main(["dag", "--out", str(out)]) == 0
    known = {  # nodes each picture must show (a stage of each DAG, its first and its last)
        "index": ["decoded_files", "parsed_batch", "kb_symbols", "kb_edges", "index_stats"],
        "retrieval": ["heuristic_task_query", "signal_matrix", "scope", "budget_plan", "context_package"],
        "evaluation": ["tree_job", "indexed_trees", "case_record", "case_results"],
    }
    for name, nodes in known.items():
        svg = (out / f"{name}.svg").read_text()
        assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
        for node in nodes:
            assert f">{node}</text>" in svg, (name, node)
    assert ">signal_matrix</text>" not in (out / "index.svg").read_text()  # each file is its own DAG
    assert ">parsed_batch</text>" not in (out / "retrieval.svg").read_text()
    assert "index.svg" in capsys.readouterr().out


def test_dag_without_dot_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(dag.shutil, "which", lambda name: None)
    assert main(["dag", "--out", str(tmp_path / "tmp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "dot" in err and "apt-get install graphviz" in err
    assert not (tmp_path / "tmp").exists()
