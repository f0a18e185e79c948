"""The symbol table's derived arrays kept in a KB version (`cra.drivers.kb.symbol_cache`): read back equal to those
built from the KB, used by later loads, and never trusted when missing, damaged or of other frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cra.dataflows.retrieval import symbol_table as symbol_table_module
from cra.dataflows.retrieval.symbol_table import SymbolTable, TakenStrings
from cra.drivers.common.conventions import load_conventions
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb import store
from cra.drivers.kb.store import live_version, load_kb
from cra.drivers.retrieval.retriever import retrieve
from tests.fixture_repo import make_repo

TASK = "LoginHandler.validate_login rejects a valid password"


def answer(kb) -> str:
    """The request's package as `cra retrieve --format json` prints it."""
    return retrieve(kb, TASK, outputs=("json_text",)).outputs["json_text"]


@pytest.fixture()
def indexed(tmp_path):
    root = make_repo(tmp_path / "repo")
    index_repository(root, history=20)
    store._LOADED.clear()
    yield root
    store._LOADED.clear()


def kept(root) -> list:
    return sorted(live_version(root / ".cra").glob("symbol_table.*"))


def loaded_anew(root):
    store._LOADED.clear()
    return load_kb(root / ".cra")


def fields(table: SymbolTable) -> dict:
    """Every field of a symbol table as plain values (strings as lists, arrays with their dtypes)."""
    out = {}
    for name, value in vars(table).items():
        if isinstance(value, TakenStrings):
            out[name] = value[np.arange(len(value))].tolist()
        else:
            array = np.asarray(value)
            out[name] = (array.dtype.str, array.tolist())
    return out


def rebuilt(kb) -> SymbolTable:
    words = kb.words
    return symbol_table_module.symbol_table(
        kb.tables["symbols"],
        kb.tables["symbol_edges"],
        words["symbol_name_codes"],
        words["symbol_name_terms"],
        words["symbol_norms"],
        kb.files,
        load_conventions(),
    )


def test_a_kept_symbol_table_equals_one_rebuilt_and_later_loads_read_it(indexed, monkeypatch):
    first = loaded_anew(indexed).word_overrides["kb_symbol_table"]
    assert len(kept(indexed)) == 1  # the first load keeps the derived arrays in the version
    assert len(first.parent) and len(first.edge_src)  # (the fixture has parents and symbol edges)
    monkeypatch.setattr(symbol_table_module, "derived_arrays", lambda *a, **k: pytest.fail("derived again"))
    kb = loaded_anew(indexed)
    again = kb.word_overrides["kb_symbol_table"]
    monkeypatch.undo()
    assert fields(again) == fields(first) == fields(rebuilt(kb))


def test_a_kb_without_its_kept_arrays_or_with_damaged_ones_answers_the_same(indexed):
    expected = answer(loaded_anew(indexed))
    (folder,) = kept(indexed)
    (folder / "parent.arrow").write_bytes(b"not arrow")  # damaged: derived again, the folder left as it is
    assert answer(loaded_anew(indexed)) == expected
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()  # a KB from before the arrays were kept: derived and kept on its first load
    assert answer(loaded_anew(indexed)) == expected
    assert kept(indexed) == [folder]


def test_arrays_kept_for_other_frames_are_not_used(indexed):
    kb = loaded_anew(indexed)
    expected = fields(kb.word_overrides["kb_symbol_table"])
    (folder,) = kept(indexed)
    short = pa.table({"values": pa.array(np.zeros(1, dtype=np.int64))})
    with pa.ipc.new_file(folder / "parent.arrow", short.schema) as writer:
        writer.write_table(short)  # (a version re-indexed under a reader: other lengths)
    assert fields(loaded_anew(indexed).word_overrides["kb_symbol_table"]) == expected


def test_duplicate_edges_are_found_whatever_the_range_of_their_ids():
    big = 1 << 40  # ids whose spans do not fit one integer key: hashed as three columns
    for offset in (0, big):
        edges = pd.DataFrame(
            {
                "src_symbol_id": np.array([1, 1, 2, 1, 2], dtype=np.int64) + offset,
                "dst_symbol_id": np.array([5, 5, 5, 5, 2 * big], dtype=np.int64),
                "kind": ["call", "call", "call", "import", None],
            }
        )
        found = symbol_table_module._duplicated_edges(edges)
        key = edges.assign(kind=pd.factorize(edges["kind"])[0])
        assert found.tolist() == key.duplicated().tolist() == [False, True, False, False, False]
