"""Nodes in dataflows/ do no I/O: what the index run stores while it runs (the contents table, the parse checkpoint)
reaches its nodes as objects the driver makes (`cra.dataflows.index.storage`), and no dataflows module reads or writes
a file itself."""

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from cra.dataflows.index import metadata, parsing
from cra.dataflows.index.storage import ContentsStore, ParseCheckpoint

DATAFLOWS = Path(__file__).resolve().parent.parent / "dataflows"
FILE_MODULES = {"pickle", "tempfile", "shutil", "pyarrow.parquet", "pyarrow.feather"}
FILE_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "memory_map", "new_file", "open_file"}


def test_no_dataflows_module_touches_a_file():
    found = []
    for path in sorted(DATAFLOWS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [f"{path.name}:{node.lineno} imports {n}" for n in names if n in FILE_MODULES]
            elif isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called in FILE_CALLS:
                    found.append(f"{path.name}:{node.lineno} calls {called}")
    assert not found, found


class Texts(ContentsStore):
    """The contents table kept in memory: the nodes cannot tell it from the driver's file."""

    def __init__(self):
        self.table = None

    def write(self, batches) -> None:
        self.table = pa.concat_tables(list(batches))

    def texts(self, file_ids) -> list[str]:
        at = {int(i): row for row, i in enumerate(self.table.column("file_id").to_pylist())}
        return [self.table.column("text")[at[int(i)]].as_py() for i in file_ids]

    def frame(self) -> pd.DataFrame:
        return self.table.to_pandas(types_mapper=pd.ArrowDtype)


class Kept(ParseCheckpoint):
    def __init__(self):
        self.saved = {}

    def load(self, key: str):
        return self.saved.get(key)

    def save(self, key: str, batch) -> None:
        self.saved[key] = batch


def test_the_contents_and_the_parse_go_through_the_stores_the_driver_hands_in():
    indexed = pd.DataFrame(
        {"file_id": [1, 0], "path": ["b.py", "a.py"], "language": ["python"] * 2, "hash": ["hb", "ha"]}
    ).assign(reused=False)
    decoded = pd.DataFrame({"path": ["a.py", "b.py"], "text": ["def alpha():\n    return 1\n", "x = 2\n"]})
    store = metadata.written_contents(indexed, decoded, None, Texts())
    assert store.table.column("file_id").to_pylist() == [0, 1]  # ordered by file_id, as the KB keeps it
    assert metadata.kb_contents(store)["text"].tolist() == decoded["text"].tolist()

    def per_line(text):
        return np.array([len(line) // 4 for line in text.split("\n")])

    checkpoint, files = Kept(), indexed[["file_id", "path", "language", "hash"]]
    batch = parsing.parsed_batch(files, store, len, per_line, checkpoint)
    assert batch.symbols["name"].tolist() == ["alpha"] and batch.resumed == 0
    assert list(checkpoint.saved.values()) == [batch]
    assert parsing.parsed_batch(files, store, len, per_line, checkpoint).resumed == 2  # taken, not parsed again
