"""The notebooks run top to bottom (signal breakdown on this repository, evaluation of its own cases)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.parametrize("name", ["signal_breakdown.ipynb", "evaluation.ipynb", "scaling.ipynb"])
def test_notebook_executes(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HAMILTON_AUTOLOAD_EXTENSIONS", "0")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "a chart was drawn"
