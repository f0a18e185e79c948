"""`cra dag`: the index, retrieval and evaluation DAGs drawn as SVG with Hamilton's visualisation.

Each picture is the driver the commands build (`cra.drivers.index.indexer.index_driver`, `cra.drivers.retrieval.retriever.retrieval_driver`
with the default configuration, `cra.drivers.evaluation.evaluate.evaluation_driver`), so it shows every node that runs. Drawing
needs Graphviz: the `graphviz` Python package (the `dev` extra) and its `dot` program (Debian: `apt-get install
graphviz`).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.output import write_bytes_atomic

DAGS = ("index", "retrieval", "evaluation")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `cra dag`."""
    parser.add_argument(
        "--out",
        default="dags",
        help="directory for index.svg, retrieval.svg, evaluation.svg (default ./dags; created with its parents if missing)",
    )


def dag_driver(name: str):
    """The Hamilton driver of one DAG (one of DAGS), built as the command that runs it builds it."""
    if name == "index":
        from cra.drivers.index.indexer import index_driver

        return index_driver()
    if name == "retrieval":
        from cra.drivers.retrieval.retriever import retrieval_driver

        return retrieval_driver()
    from cra.drivers.evaluation.evaluate import evaluation_driver

    return evaluation_driver()


def _check_graphviz() -> None:
    """A CraError naming what to install when Graphviz cannot draw here."""
    if shutil.which("dot") is None:
        raise CraError(
            "Graphviz's `dot` program is not installed: apt-get install graphviz (or brew install graphviz), then rerun cra dag."
        )
    try:
        import graphviz  # noqa: F401
    except ImportError:
        raise CraError(
            "The graphviz Python package is not installed: pip install graphviz (or the dev extra), then rerun cra dag."
        ) from None


def dag_svg(name: str) -> bytes:
    """One DAG as an SVG picture (Hamilton's `display_all_functions`, left to right, one box per input)."""
    graph = dag_driver(name).display_all_functions(orient="LR", deduplicate_inputs=True)
    return graph.pipe(format="svg")


def run(args) -> int:
    _check_graphviz()
    for name in DAGS:
        path = Path(args.out) / f"{name}.svg"
        write_bytes_atomic(path, dag_svg(name))
        print(f"wrote {path}")
    return 0
